/**
 * Errors of the agent loop. The SDK retries rate limits, overloads and server errors itself
 * (429, 5xx, 529; `maxRetries`); when it gives up, {@link toModelError} turns what it threw into
 * a {@link ModelUnavailableError} that the worker turns into a short message to the user.
 */
import Anthropic from "@anthropic-ai/sdk";
import { localize, type Locale } from "../i18n.js";
import { redact } from "../log.js";

/** Why the model could not answer. */
export type ModelErrorReason =
  /** 529 `overloaded_error`. */
  | "overloaded"
  /** 429 `rate_limit_error`. */
  | "rate_limited"
  /** Any other 5xx. */
  | "server_error"
  /** No HTTP answer: DNS, refused connection, reset, or the client's timeout. */
  | "connection"
  /** 400 (and other 4xx not listed below): our request was invalid; retrying will not help. */
  | "bad_request"
  /** 401 / 403: the API key is missing, wrong, or not allowed. */
  | "auth"
  /** The run's abort signal fired. */
  | "aborted"
  /**
   * The request did not fit the model's context window: a 400 "prompt is too long", or a response
   * that stopped with `stop_reason: "model_context_window_exceeded"`. Not retryable as it is: the
   * worker shortens the conversation (compaction) and tries once more.
   */
  | "context_window";

/**
 * The model gave no answer. `retryable` is true for overloads, rate limits, server and
 * connection errors (the job may be retried later) and false for 4xx answers (a bug or a bad
 * key: retrying sends the same request again). The message never contains the API key
 * (it passes through `redact`).
 *
 * Source of the status codes: https://docs.anthropic.com/en/api/errors
 */
export class ModelUnavailableError extends Error {
  /** True when the same request may succeed later. */
  readonly retryable: boolean;
  readonly reason: ModelErrorReason;
  /** HTTP status of the last attempt, when there was an answer. */
  readonly status: number | undefined;
  /** The API's `request-id`, for support requests. */
  readonly requestId: string | undefined;

  /**
   * True when the loop already retried this failure until the answer's deadline (`AgentDeps.retryUntil`):
   * the service stayed busy, and retrying the job would not help (`retryable` is then false).
   */
  readonly exhausted: boolean;

  /**
   * True when the API sent nothing at all within the call's idle bound (`STREAM_IDLE_SECONDS`):
   * no response and no event, or nothing more after the last one. The loop gives a model that
   * never answers up after `MODEL_SILENT_LIMIT_MS` (`contract.ts`) instead of the answer's deadline.
   */
  readonly silent: boolean;

  /**
   * The model id the API said it does not serve (404 `not_found_error` about the request's
   * `model`: retired, or never existed; `""` when the API did not name it: the request's), else
   * undefined. The loop falls back to `ANTHROPIC_MODEL` for a conversation whose chosen model this is.
   */
  readonly missingModel: string | undefined;

  constructor(
    reason: ModelErrorReason,
    message: string,
    options: {
      status?: number;
      requestId?: string;
      cause?: unknown;
      exhausted?: boolean;
      silent?: boolean;
      missingModel?: string;
    } = {},
  ) {
    super(redact(message), { cause: options.cause });
    this.name = "ModelUnavailableError";
    this.reason = reason;
    this.exhausted = options.exhausted ?? false;
    this.silent = options.silent ?? false;
    this.missingModel = options.missingModel;
    this.retryable = !this.exhausted && isPassing(reason);
    this.status = options.status;
    this.requestId = options.requestId;
  }

  /** The same failure, marked as retried until the deadline ({@link exhausted}). */
  asExhausted(): ModelUnavailableError {
    return new ModelUnavailableError(this.reason, `${this.message} (still failing when the answer's deadline came)`, {
      ...(this.status !== undefined ? { status: this.status } : {}),
      ...(this.requestId !== undefined ? { requestId: this.requestId } : {}),
      cause: this.cause,
      exhausted: true,
      silent: this.silent,
      ...(this.missingModel !== undefined ? { missingModel: this.missingModel } : {}),
    });
  }

  /**
   * One line for the operator (the terminal chat shows it under the apology): what failed and which
   * setting to check, e.g. `ANTHROPIC_API_KEY was rejected (401 authentication_error: invalid
   * x-api-key); check the key in .env`. English; never contains the key (the message is redacted).
   */
  operatorCause(): string {
    const detail = this.message.replace(/^Messages API answered /, "");
    switch (this.reason) {
      case "auth":
        return `ANTHROPIC_API_KEY was rejected (${detail}); check the key in .env`;
      case "connection":
        return `${this.message}; check ANTHROPIC_BASE_URL and the network`;
      case "aborted":
        return "the model call was aborted (the bot is stopping)";
      default:
        if (this.missingModel !== undefined) {
          return (
            `the model ${this.missingModel || "of the request"} is not served by the Messages API (${detail}); set ` +
            `ANTHROPIC_MODEL (and MODELS) to a current model id`
          );
        }
        if (this.status === 404) {
          return (
            `the Messages API address was not found (${detail}); ANTHROPIC_BASE_URL must be the server ` +
            `root, such as https://api.anthropic.com (without /v1)`
          );
        }
        return this.message;
    }
  }

  /** A short sentence for the user in `locale`, without technical detail. */
  userMessage(locale: Locale): string {
    if (this.reason === "context_window") return localize(locale, TOO_LONG_TEXT);
    return isPassing(this.reason)
      ? localize(locale, {
          "zh-TW": "抱歉，AI 服務目前忙碌或暫時無法連線，請稍後再試一次。",
          en: "Sorry, the AI service is busy or unreachable right now. Please try again in a moment.",
        })
      : localize(locale, {
          "zh-TW": "抱歉，這個請求無法處理（服務設定有問題），已記錄下來給管理員。",
          en: "Sorry, this request could not be processed (a service configuration problem); it has been logged for the operator.",
        });
  }
}

/** What the user reads when a conversation is too long for the model even after it was shortened. */
export const TOO_LONG_TEXT = {
  "zh-TW": "抱歉，這段對話太長了，我已經無法一次讀完。請傳送 /reset 清除對話記憶後重新開始（待辦和提醒不受影響）。",
  en: "Sorry, this conversation has grown too long for me to read at once. Send /reset to start fresh (your todos and reminders stay).",
};

/**
 * The model id of a 404 `not_found_error` about the request's model (the API answers
 * `{"type":"not_found_error","message":"model: claude-…"}` for a model it does not serve,
 * https://docs.anthropic.com/en/api/errors), else undefined: a 404 for a wrong address
 * (`ANTHROPIC_BASE_URL` with `/v1`) says nothing about a model. The id is the one the message
 * names, or `""` (the request's model) when it names none.
 */
function missingModelOf(status: number, body: { type?: unknown; message?: unknown } | undefined): string | undefined {
  if (status !== 404 || body?.type !== "not_found_error" || typeof body.message !== "string") return undefined;
  const named = /^\s*model\s*:\s*(\S+)/i.exec(body.message);
  if (named) return named[1]!.slice(0, 100);
  return /\bmodel\b/i.test(body.message) ? "" : undefined;
}

/**
 * True when the API said the request does not fit the context window: `400 invalid_request_error`
 * "prompt is too long: N tokens > M maximum" (https://docs.anthropic.com/en/api/errors).
 */
function isPromptTooLong(status: number, body: { type?: unknown; message?: unknown } | undefined): boolean {
  return status === 400 && typeof body?.message === "string" && /prompt is too long/i.test(body.message);
}

/** True when `error` is a {@link ModelUnavailableError} saying the request did not fit the context window. */
export function isContextWindowExceeded(error: unknown): error is ModelUnavailableError {
  return error instanceof ModelUnavailableError && error.reason === "context_window";
}

/** True for the reasons that pass with time (overloaded, rate limited, server error, connection). */
function isPassing(reason: ModelErrorReason): boolean {
  return reason === "overloaded" || reason === "rate_limited" || reason === "server_error" || reason === "connection";
}

/** The first Node network error (`connect ECONNREFUSED 127.0.0.1:1`, `ENOTFOUND`, …) in the cause chain of `error`, as a few words. */
function networkCode(error: unknown): string | undefined {
  for (let e = error, depth = 0; e instanceof Error && depth < 5; e = e.cause, depth++) {
    const code = (e as { code?: unknown }).code;
    if (typeof code === "string" && /^E[A-Z]+$/.test(code))
      return e.message.includes(code) ? e.message.replace(/\.+$/, "") : code;
  }
  return undefined;
}

/** The HTTP status each error type of the Messages API comes with (https://docs.anthropic.com/en/api/errors). */
const STREAM_ERROR_STATUS: Record<string, number> = {
  invalid_request_error: 400,
  authentication_error: 401,
  permission_error: 403,
  not_found_error: 404,
  request_too_large: 413,
  rate_limit_error: 429,
  api_error: 500,
  overloaded_error: 529,
};

/**
 * Converts what `client.messages.create` or `messages.stream` threw (after the SDK's own retries)
 * into a {@link ModelUnavailableError}; an `error` event in the middle of a stream is mapped by its
 * error type (`overloaded_error` → overloaded, retryable). Anything that is not an SDK error is
 * returned unchanged.
 */
export function toModelError(error: unknown): unknown {
  if (error instanceof ModelUnavailableError) return error;
  if (error instanceof Anthropic.APIUserAbortError)
    return new ModelUnavailableError("aborted", "the model call was aborted", { cause: error });
  if (error instanceof Anthropic.APIConnectionError) {
    const timedOut = error instanceof Anthropic.APIConnectionTimeoutError;
    const why = timedOut ? "no answer in time" : (networkCode(error) ?? error.message.replace(/\.+$/, ""));
    return new ModelUnavailableError("connection", `cannot reach the Messages API: ${why}`, { cause: error });
  }
  if (error instanceof Anthropic.APIError) {
    const status = error.status ?? 0;
    const requestId = error.requestID ?? undefined;
    // The body is `{"type":"error","error":{"type","message"}}` (https://docs.anthropic.com/en/api/errors).
    const body = (error.error as { error?: { type?: unknown; message?: unknown } } | undefined)?.error;
    // An `error` event in the middle of a stream has no HTTP status: its error type tells the reason
    // (https://docs.anthropic.com/en/docs/build-with-claude/streaming#error-events).
    const streamed = status === 0 ? STREAM_ERROR_STATUS[String(body?.type)] : undefined;
    const effective = streamed ?? status;
    const reason: ModelErrorReason = isPromptTooLong(effective, body)
      ? "context_window"
      : effective === 529
        ? "overloaded"
        : effective === 429
          ? "rate_limited"
          : effective >= 500
            ? "server_error"
            : effective === 401 || effective === 403
              ? "auth"
              : "bad_request";
    const detail =
      typeof body?.message === "string" ? `${String(body.type ?? "error")}: ${body.message}` : error.message;
    const missingModel = missingModelOf(effective, body);
    return new ModelUnavailableError(reason, `Messages API answered ${status} ${detail}`, {
      status,
      requestId,
      cause: error,
      ...(missingModel !== undefined ? { missingModel } : {}),
    });
  }
  return error;
}
