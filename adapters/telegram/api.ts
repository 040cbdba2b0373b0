/**
 * The grammy API client for the Bot API, shared by the inbound (Bot) and outbound (Api) halves:
 * `TELEGRAM_API_ROOT` for self-hosted Bot API servers and tests, and `@grammyjs/auto-retry` for
 * 429 `retry_after` answers (https://core.telegram.org/bots/faq#my-bot-is-hitting-limits-how-do-i-avoid-this).
 */
import { autoRetry } from "@grammyjs/auto-retry";
import { Api, GrammyError, type ApiClientOptions, type Transformer } from "grammy";
import type { Config } from "../../src/config.js";
import { registerSecrets } from "../../src/log.js";

/**
 * Retry policy for rate limits: at most 3 retries, and never wait more than 60 s for one
 * `retry_after` (a longer wait fails the call, so the worker's job retry decides). Network errors
 * are not retried here (auto-retry would retry them forever); 5xx answers are retried with backoff.
 */
export const RETRY_OPTIONS = {
  maxRetryAttempts: 3,
  maxDelaySeconds: 60,
  rethrowHttpErrors: true,
  rethrowInternalServerErrors: false,
} as const;

/** grammy client options from the configuration (`apiRoot` from `TELEGRAM_API_ROOT`, when set). */
export function clientOptions(config: Config): ApiClientOptions {
  // grammy's default is 500 s per call; long polling waits 30 s, so 75 s bounds every call
  // (including a Bot API that cannot be reached at all) without cutting a poll short.
  const options: ApiClientOptions = { timeoutSeconds: API_TIMEOUT_SECONDS };
  return config.TELEGRAM_API_ROOT ? { ...options, apiRoot: config.TELEGRAM_API_ROOT.replace(/\/+$/, "") } : options;
}

/** Longest wait for one Bot API call, in seconds (grammy `ApiClientOptions.timeoutSeconds`). */
export const API_TIMEOUT_SECONDS = 75;

/** Longest wait for the first `getMe` at start-up, in ms: past it, start-up fails with a clear message. */
export const START_TIMEOUT_MS = 30_000;

/**
 * The bot token from the configuration, registered for log redaction.
 * @throws {Error} when `TELEGRAM_BOT_TOKEN` is not set.
 */
export function botToken(config: Config): string {
  const token = config.TELEGRAM_BOT_TOKEN;
  if (!token) throw new Error("TELEGRAM_BOT_TOKEN is not set: the Telegram adapter cannot start");
  registerSecrets([token]);
  return token;
}

/** Installs the rate-limit retry transformer on an Api instance (the Bot's or a standalone one). */
export function installRetry(api: Api): Api {
  api.config.use(autoRetry(RETRY_OPTIONS));
  return api;
}

/** A REST-only Bot API client (for worker-only processes). @throws {Error} without a bot token. */
export function createApi(config: Config): Api {
  return installRetry(new Api(botToken(config), clientOptions(config)));
}

/**
 * True for Bot API errors that mean "nothing to do": editing to the same content ("message is not
 * modified"), answering a callback query too late or twice ("query is too old"), editing a prompt
 * that was deleted ("message to edit not found").
 */
export function isHarmless(error: unknown): boolean {
  return (
    error instanceof GrammyError &&
    error.error_code === 400 &&
    /message is not modified|query is too old|query ID is invalid|message to edit not found|message can't be edited/i.test(
      error.description,
    )
  );
}

/** True when Telegram rejected the HTML of a message (400 "can't parse entities"). */
export function isEntityError(error: unknown): boolean {
  return error instanceof GrammyError && error.error_code === 400 && /can't parse entities/i.test(error.description);
}

/** True when an edit would not change the message (400 "message is not modified"). */
export function isNotModified(error: unknown): boolean {
  return error instanceof GrammyError && error.error_code === 400 && /message is not modified/i.test(error.description);
}

/**
 * True when a message cannot be edited any more: 400 "message to edit not found" (deleted in the
 * chat meanwhile) or "message can't be edited".
 */
export function isUneditable(error: unknown): boolean {
  return (
    error instanceof GrammyError &&
    error.error_code === 400 &&
    /message to edit not found|message can't be edited/i.test(error.description)
  );
}

/**
 * An API transformer for groups upgraded to supergroups: a call to a chat that answers `400 Bad
 * Request: group chat was upgraded to a supergroup chat` with `parameters.migrate_to_chat_id`
 * (https://core.telegram.org/bots/api#responseparameters) is made once more to the new chat, and
 * later calls naming the old id go to the new one directly (remembered in this process).
 * `onMigrated` is told each move once (old and new chat id, as strings) and must not throw.
 */
export function chatMigrations(onMigrated: (from: string, to: string) => void): Transformer {
  const moved = new Map<string, string>();
  return async (prev, method, payload, signal) => {
    const chatId = (payload as { chat_id?: unknown }).chat_id;
    const id = typeof chatId === "number" || typeof chatId === "string" ? String(chatId) : undefined;
    const known = id === undefined ? undefined : moved.get(id);
    const asked = known === undefined ? payload : ({ ...payload, chat_id: Number(known) } as typeof payload);
    const result = await prev(method, asked, signal);
    const to = result.ok ? undefined : result.parameters?.migrate_to_chat_id;
    if (to === undefined || id === undefined || known !== undefined) return result;
    moved.set(id, String(to));
    onMigrated(id, String(to));
    return prev(method, { ...payload, chat_id: to } as typeof payload, signal);
  };
}
