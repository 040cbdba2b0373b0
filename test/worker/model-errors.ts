/** Error replies of the fake model that the shared fake has no helper for. */
import type { FakeErrorReply } from "../fakes/anthropic.js";

/** `400 invalid_request_error`: not retryable, the worker must apologise. */
export function badRequest(): FakeErrorReply {
  return {
    status: 400,
    errorType: "invalid_request_error",
    message: "messages: text content blocks must be non-empty",
  };
}
