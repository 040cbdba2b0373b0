/**
 * Watching the event loop while work runs: how long it went without a turn, and how long it was busy.
 */

/** What {@link watchEventLoop} saw, in ms. */
export interface EventLoopWatch<T> {
  result: T;
  /** The longest the event loop went without a tick of a 5 ms timer. */
  stallMs: number;
  /** The time the event loop was busy (not idle), from `performance.eventLoopUtilization`. */
  busyMs: number;
  /** Wall time. */
  tookMs: number;
}

/** Runs `work` while a 5 ms timer ticks; see {@link EventLoopWatch}. */
export async function watchEventLoop<T>(work: () => Promise<T>): Promise<EventLoopWatch<T>> {
  let last = performance.now();
  let stallMs = 0;
  const ticker = setInterval(() => {
    const now = performance.now();
    stallMs = Math.max(stallMs, now - last);
    last = now;
  }, 5);
  const started = performance.now();
  const loop = performance.eventLoopUtilization();
  try {
    const result = await work();
    const now = performance.now();
    const busyMs = performance.eventLoopUtilization(loop).active;
    return { result, stallMs: Math.max(stallMs, now - last), busyMs, tookMs: now - started };
  } finally {
    clearInterval(ticker);
  }
}
