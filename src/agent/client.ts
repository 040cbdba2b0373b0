/**
 * The Anthropic client: the real `@anthropic-ai/sdk`, configured from {@link Config}.
 */
import Anthropic from "@anthropic-ai/sdk";
import type { Config } from "../config.js";
import { registerSecrets } from "../log.js";
import { countingFetch } from "../metrics.js";

/** Options of {@link createAnthropicClient}. */
export interface AnthropicClientOptions {
  /** Attempts after the first for 408/409/429/5xx/529 and connection errors (SDK backoff: 0.5 s doubling, at most 8 s, or `retry-after`). Default 2. */
  maxRetries?: number;
  /** Limit of one HTTP attempt, in ms. Default 120 000 (the SDK's own default is 10 minutes). */
  timeoutMs?: number;
}

/** Default limit of one HTTP attempt to the Messages API, in ms. */
export const DEFAULT_MODEL_TIMEOUT_MS = 120_000;

/**
 * Creates the SDK client (and registers the key with `registerSecrets`, so `redact` hides it) with `apiKey` =
 * `ANTHROPIC_API_KEY` and `baseURL` = `ANTHROPIC_BASE_URL`
 * (SDK default `https://api.anthropic.com` when unset). The SDK's own logging is limited to
 * errors, which never include the key.
 *
 * Never throws for a missing key; the first call then fails with 401 (a non-retryable
 * `ModelUnavailableError` once mapped by the loop). `loadConfig({ purpose: "run" })` requires the key.
 */
export function createAnthropicClient(config: Config, options: AnthropicClientOptions = {}): Anthropic {
  if (config.ANTHROPIC_API_KEY) registerSecrets([config.ANTHROPIC_API_KEY]);
  return new Anthropic({
    apiKey: config.ANTHROPIC_API_KEY ?? null,
    authToken: null,
    baseURL: config.ANTHROPIC_BASE_URL ?? null,
    maxRetries: options.maxRetries ?? 2,
    timeout: options.timeoutMs ?? DEFAULT_MODEL_TIMEOUT_MS,
    logLevel: "error",
    fetch: countingFetch(),
    // The bot's own spans (src/telemetry/otel.ts) describe each model call under its answer; the SDK's would repeat them outside it.
    openTelemetry: { traces: false, propagation: false },
  });
}
