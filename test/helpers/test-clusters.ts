/**
 * Vitest global setup of the `cluster` project (`vitest.config.ts`): starts one three-master Redis
 * Cluster per test worker (`maxWorkers`) before the project's files run, and stops them after. A
 * worker runs one file at a time, so each file has the cluster of its worker to itself
 * (`startTestRedis` in `./use-redis.ts`, which empties it first) instead of starting one of its own:
 * `redis-cli --cluster create` and the cluster's first agreement take seconds, more on a busy machine.
 */
import type { TestProject } from "vitest/node";
import { startRedisCluster } from "./redis.js";

declare module "vitest" {
  export interface ProvidedContext {
    /** The clusters of the `cluster` project, one per test worker (`VITEST_POOL_ID` 1 is the first): address and environment. */
    testClusters: { url: string; env: Record<string, string> }[];
  }
}

/** Starts the clusters and provides them as `testClusters`; returns the teardown that stops them. */
export default async function startTestClusters(project: TestProject): Promise<() => Promise<void>> {
  const count = Math.max(1, project.globalConfig.maxWorkers);
  const started = await Promise.allSettled(Array.from({ length: count }, () => startRedisCluster()));
  const clusters = started.flatMap((s) => (s.status === "fulfilled" ? [s.value] : []));
  const stop = async () => {
    await Promise.all(clusters.map((c) => c.stop()));
  };
  const failed = started.find((s): s is PromiseRejectedResult => s.status === "rejected");
  if (failed) {
    await stop();
    throw failed.reason;
  }
  project.provide(
    "testClusters",
    clusters.map((c) => ({ url: c.url, env: c.env })),
  );
  return stop;
}
