import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    pool: "forks",
    testTimeout: 20_000,
    hookTimeout: 30_000,
    // Two cores: files run two at a time; each file starts its own redis-server (or cluster).
    maxWorkers: 2,
    env: { LOG_LEVEL: "silent" },
    projects: [
      { extends: true, test: { name: "redis", include: ["test/**/*.test.ts"] } },
      // The end-to-end tests once more, on a three-master Redis Cluster (test/helpers/redis.ts).
      { extends: true, test: { name: "cluster", include: ["test/e2e/**/*.test.ts"], env: { TEST_REDIS: "cluster" } } },
    ],
  },
});
