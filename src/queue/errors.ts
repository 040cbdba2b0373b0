/** Errors of the queue, defined where they are thrown (the producer and the access gate below it). */

/**
 * Thrown by the producer (and by `AdapterContext.enqueue`) when a message could not be queued: it
 * was malformed, the access check could not reach Redis, or Redis refused the write. Nothing was
 * queued; the adapter answers the user with a short "try again" message.
 */
export class EnqueueError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = "EnqueueError";
  }
}
