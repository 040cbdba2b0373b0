import { defineConfig } from "vitest/config";

export default defineConfig({
  test: {
    include: ["test/**/*.test.ts"],
    pool: "forks",
    testTimeout: 20_000,
    hookTimeout: 30_000,
    // Two cores: files run two at a time; each file starts its own redis-server.
    maxWorkers: 2,
    env: { LOG_LEVEL: "silent" },
  },
});
