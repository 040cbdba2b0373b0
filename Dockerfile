# syntax=docker/dockerfile:1
# Multi-stage build: compile TypeScript in one stage; the runtime image holds production
# dependencies and compiled JavaScript only, and runs as a non-root user.
# The current Node.js LTS line (26, Active LTS since October 2026); the tests also run on Node 20.
ARG NODE_VERSION=26

FROM node:${NODE_VERSION}-slim AS build
WORKDIR /app
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
COPY tools ./tools
COPY adapters ./adapters
RUN npm run build && npm prune --omit=dev

FROM node:${NODE_VERSION}-slim AS runtime
ENV NODE_ENV=production \
    HEALTH_PORT=8080
WORKDIR /app
COPY --from=build --chown=node:node /app/package.json ./
COPY --from=build --chown=node:node /app/node_modules ./node_modules
COPY --from=build --chown=node:node /app/dist ./dist
USER node
EXPOSE 8080
# 200 when Redis and the enabled platforms are connected, 503 otherwise (src/health.ts).
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+process.env.HEALTH_PORT+'/health').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
CMD ["node", "dist/src/main.js"]
