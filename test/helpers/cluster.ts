/**
 * Which tests of the end-to-end files run a second time on a Redis Cluster (the `cluster` project
 * of `vitest.config.ts`, `TEST_REDIS=cluster`). A file is on the cluster list for the stores and
 * queues whose multi-key scripts it exercises (named beside it there); its tests that exercise none
 * of those — wording, validation, a platform's behaviour, a command-line check — say so with
 * {@link itOneRedis}, and run on one Redis only.
 */
import { it } from "vitest";

/** True in the `cluster` project: the test's Redis is a three-master cluster. */
export const ON_CLUSTER = process.env.TEST_REDIS === "cluster";

/**
 * `it` for a test of a cluster-listed file that uses none of the multi-key scripts the file is
 * listed for: it runs in the `redis` project and is reported skipped in the `cluster` project.
 */
export const itOneRedis = it.skipIf(ON_CLUSTER);
