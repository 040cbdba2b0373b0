/**
 * Detects a Redis that lost its data (restarted without persistence, or a failover to an empty
 * replica) while the bot runs (issue 38 item 3). A per-deployment marker key is written at start
 * (`SET NX`: the first process writes it, the others read the same value) and checked by every
 * process each time its connection is ready again after a drop; when the marker is gone (or is
 * another one), the data it stood beside is gone too: queued messages, pending approvals, todos,
 * reminders. The process then logs one error naming the cause, counts it in `/metrics`
 * (`bot_redis_data_lost_total`) and writes a new marker that records when the loss was seen
 * (`lostAt`), so a person pressing an approval from before is told the bot lost its state
 * (`ApprovalStore.decide`: `lost`) instead of "expired".
 */
import { randomBytes } from "node:crypto";
import { z } from "zod";
import type { Logger } from "./log.js";
import { metrics } from "./metrics.js";
import type { RedisClient } from "./redis.js";

/** The marker's key (one per deployment: one Redis, or one Redis Cluster). */
export const DEPLOYMENT_MARKER_KEY = "deployment:marker";

/** The marker's value: its random id, when it was written, and when a data loss was seen (ms since the Unix epoch). */
export const DeploymentMarkerSchema = z.object({
  id: z.string().min(1),
  since: z.number().int(),
  lostAt: z.number().int().optional(),
});

/** See {@link DeploymentMarkerSchema}. */
export type DeploymentMarker = z.output<typeof DeploymentMarkerSchema>;

/**
 * The deployment's marker as stored, or undefined when there is none (or it cannot be read).
 * @throws when Redis is unreachable.
 */
export async function readMarker(redis: RedisClient): Promise<DeploymentMarker | undefined> {
  const raw = await redis.get(DEPLOYMENT_MARKER_KEY);
  if (raw === null) return undefined;
  try {
    const parsed = DeploymentMarkerSchema.safeParse(JSON.parse(raw));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

/**
 * When Redis was last seen to have lost its data (ms since the Unix epoch), or undefined when it
 * never was (or the marker is gone again: that loss is not seen yet). @throws when Redis is unreachable.
 */
export async function dataLostAt(redis: RedisClient): Promise<number | undefined> {
  return (await readMarker(redis))?.lostAt;
}

/** Writes `marker` unless one is there; returns the one stored afterwards (ours or another process's). */
async function ensureMarker(redis: RedisClient, marker: DeploymentMarker): Promise<DeploymentMarker> {
  await redis.set(DEPLOYMENT_MARKER_KEY, JSON.stringify(marker), "NX");
  return (await readMarker(redis)) ?? marker;
}

/** A running watch (see {@link watchDataLoss}). */
export interface DataLossWatch {
  /** Resolves once the marker was written or read at start (never rejects: a failure is logged). */
  readonly started: Promise<void>;
  /** Resolves once the check after the latest reconnection (or {@link DataLossWatch.verify}) is done (for tests). */
  checked(): Promise<void>;
  /** The id of the marker this process last saw (its own or another process's); undefined before the start or when it failed. */
  markerId(): string | undefined;
  /**
   * Checks the marker now, as after a reconnection: for a loss seen without one (`FLUSHALL`, or a
   * failover the connection did not notice). Resolves when done; never rejects.
   */
  verify(): Promise<void>;
  /** Stops listening to the connection. */
  stop(): void;
}

/**
 * The losses one process already logged and counted, shared by its watches (pass the same one to
 * each {@link watchDataLoss} of a process: the worker's and the producer's connections each have
 * one). A watch that still holds the marker from before then adopts the new one quietly on its
 * next check (a clean restart later must not report that loss again). Keys: the new marker's id;
 * values: when it was reported (ms since the Unix epoch).
 */
export type LossReports = Map<string, number>;

/**
 * A watch adopting a loss another watch of this process reported this recently (ms) still calls
 * its `onLoss` (both connections reconnected to the same empty Redis): 60 s.
 */
const SAME_LOSS_MS = 60_000;

/**
 * Watches `redis` for a loss of its data: writes or reads the deployment marker now, and checks it
 * each time the connection is ready again (ioredis `ready`) and when asked ({@link DataLossWatch.verify}). A loss is logged once per process as
 * an error naming the cause, counted, and the new marker records `lostAt`; `onLoss` is called with
 * that time (must not throw). Never throws; a check that fails (Redis down again) is retried at
 * the next `ready`.
 *
 * @param redis - a connection of this process (its `ready` events are heard).
 * @param log - where the error goes.
 * @param options.reports - this process's {@link LossReports}, shared by its watches (default: this watch's own).
 */
export function watchDataLoss(
  redis: RedisClient,
  log: Logger,
  options: { onLoss?: (lostAt: number) => void; now?: () => number; reports?: LossReports } = {},
): DataLossWatch {
  const now = options.now ?? Date.now;
  const reportedLosses: LossReports = options.reports ?? new Map();
  const fresh = (lostAt?: number): DeploymentMarker => ({
    id: randomBytes(8).toString("hex"),
    since: now(),
    ...(lostAt !== undefined ? { lostAt } : {}),
  });
  let seen: string | undefined;
  const started = ensureMarker(redis, fresh()).then(
    (marker) => void (seen = marker.id),
    (err: unknown) => log.warn({ err }, "could not write the deployment marker of Redis; data loss is not watched"),
  );
  let check: Promise<void> = Promise.resolve();
  const onReady = (): Promise<void> =>
    (check = check.then(async () => {
      await started;
      if (seen === undefined) return;
      try {
        const marker = await readMarker(redis);
        if (marker?.id === seen) return;
        // Another process may have seen the loss first and written the new marker (with lostAt).
        let stored = marker ?? (await ensureMarker(redis, fresh(now())));
        if (stored.lostAt === undefined) {
          // A process started on the empty Redis wrote a marker of its own: it gets the loss's time.
          stored = { ...stored, lostAt: now() };
          await redis.set(DEPLOYMENT_MARKER_KEY, JSON.stringify(stored));
        }
        const lostAt = stored.lostAt ?? now();
        seen = stored.id;
        const reportedAt = reportedLosses.get(stored.id);
        if (reportedAt !== undefined) {
          // This process already logged and counted this loss (another of its watches saw it).
          if (now() - reportedAt < SAME_LOSS_MS) options.onLoss?.(lostAt);
          return;
        }
        reportedLosses.set(stored.id, now());
        metrics.redisDataLost();
        log.error(
          { marker: DEPLOYMENT_MARKER_KEY, lostAt },
          "Redis lost its data: the deployment marker is gone (Redis restarted without persistence, or a failover " +
            "to an empty replica or a new Redis); queued messages, pending approvals, todos and reminders written " +
            "before are lost. Turn persistence on (appendonly yes)",
        );
        options.onLoss?.(lostAt);
      } catch (err) {
        log.warn({ err }, "could not check the deployment marker of Redis after reconnecting");
      }
    }));
  const listener = () => void onReady();
  redis.on("ready", listener);
  return {
    started,
    checked: () => check,
    markerId: () => seen,
    verify: onReady,
    stop: () => void redis.off("ready", listener),
  };
}
