# syntax=docker/dockerfile:1
# Multi-stage build: compile TypeScript in one stage (with the dev dependencies: typescript, tsx);
# the runtime image holds production dependencies and compiled JavaScript only, and runs as a
# non-root user. `npm run trace` and `npm run tools` work in it too (scripts/run.mjs runs dist/
# when the sources and tsx are absent): `docker compose exec worker npm run trace -- telegram <chatId>`.
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
RUN npm run build && npm prune --omit=dev --no-audit --no-fund

FROM node:${NODE_VERSION}-slim AS runtime
ENV NODE_ENV=production
WORKDIR /app
COPY --from=build --chown=node:node /app/package.json ./
COPY --from=build --chown=node:node /app/node_modules ./node_modules
COPY --from=build --chown=node:node /app/dist ./dist
COPY --chown=node:node scripts/run.mjs ./scripts/run.mjs
USER node
EXPOSE 8080
# 200 when Redis and the enabled platforms are connected, 503 otherwise (src/health.ts).
# The port is HTTP_PORT, or HEALTH_PORT (its old name); both blank or unset (`docker run --env-file
# .env` with `HTTP_PORT=` in .env) means 8080 here, in the check and in CMD alike, so the check
# works whatever .env leaves blank. No ENV default: an image default under one name would clash
# with the other name set to another port (refused at start-up).
HEALTHCHECK --interval=30s --timeout=5s --start-period=30s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:'+(process.env.HTTP_PORT||process.env.HEALTH_PORT||8080)+'/health').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"]
CMD ["sh", "-c", "if [ -z \"$HTTP_PORT\" ] && [ -z \"$HEALTH_PORT\" ]; then export HTTP_PORT=8080; fi; exec node dist/src/main.js"]
