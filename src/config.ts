/**
 * Configuration: one zod schema over the environment.
 *
 * Every variable is documented in `.env.example`; `../shared/DESIGN.md` has the table of names.
 * {@link loadConfig} reports every problem at once and never prints a secret's value.
 */
import { z } from "zod";

/** Locales the bot's own messages are written in. */
export const LOCALES = ["zh-TW", "en"] as const;
/** A locale of the bot's own messages: `zh-TW` (default) or `en`. */
export type Locale = (typeof LOCALES)[number];

/** Names of the variables that hold secrets: never printed, always redacted from logs (and the password inside `REDIS_URL`). */
export const SECRET_VARIABLES = [
  "ANTHROPIC_API_KEY",
  "TELEGRAM_BOT_TOKEN",
  "TELEGRAM_WEBHOOK_SECRET",
  "DISCORD_TOKEN",
  "CWA_API_KEY",
] as const;

const optionalString = z
  .string()
  .trim()
  .transform((v) => (v === "" ? undefined : v))
  .optional();

const optionalUrl = (what: string) =>
  optionalString.refine((v) => v === undefined || URL.canParse(v), {
    message: `must be a full URL (${what})`,
  });

const int = (min: number, max: number, fallback: number) =>
  z.coerce
    .number({ message: `must be a whole number from ${min} to ${max}` })
    .int({ message: `must be a whole number from ${min} to ${max}` })
    .min(min, { message: `must be at least ${min}` })
    .max(max, { message: `must be at most ${max}` })
    .default(fallback);

function isTimeZone(tz: string): boolean {
  try {
    new Intl.DateTimeFormat("en", { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}

/** The zod schema over `process.env`. Use {@link loadConfig} rather than parsing with it directly. */
export const ConfigSchema = z.object({
  ANTHROPIC_API_KEY: optionalString,
  ANTHROPIC_BASE_URL: optionalUrl("the Messages API endpoint, e.g. https://api.anthropic.com"),
  ANTHROPIC_MODEL: z.string().trim().min(1).default("claude-opus-5"),
  /** Output budget of one model call, in tokens. */
  ANTHROPIC_MAX_TOKENS: int(256, 64000, 2048),

  TELEGRAM_BOT_TOKEN: optionalString.refine((v) => v === undefined || /^\d+:[\w-]{20,}$/.test(v), {
    message: "does not look like a bot token from @BotFather (digits, a colon, then letters)",
  }),
  TELEGRAM_API_ROOT: optionalUrl("a Bot API server root, e.g. https://api.telegram.org"),
  TELEGRAM_WEBHOOK_URL: optionalUrl("the public HTTPS address Telegram posts updates to"),
  TELEGRAM_WEBHOOK_SECRET: optionalString.refine(
    (v) => v === undefined || /^[A-Za-z0-9_-]{1,256}$/.test(v),
    { message: "must be 1-256 characters of A-Z, a-z, 0-9, _ and - (Bot API setWebhook secret_token)" },
  ),
  TELEGRAM_WEBHOOK_PORT: int(1, 65535, 8443),

  DISCORD_TOKEN: optionalString,
  DISCORD_API_URL: optionalUrl("a REST base ending in /api, e.g. https://discord.com/api"),
  DISCORD_GUILD_ID: optionalString.refine((v) => v === undefined || /^\d{15,21}$/.test(v), {
    message: "must be a guild (server) id: 15-21 digits",
  }),

  REDIS_URL: optionalString.refine((v) => v === undefined || v.startsWith("/") || URL.canParse(v), {
    message: "must be a redis:// or rediss:// URL, or the absolute path of a unix socket",
  }),

  CWA_API_KEY: optionalString,
  CWA_API_BASE: z
    .string()
    .trim()
    .default("https://opendata.cwa.gov.tw/api")
    .refine((v) => URL.canParse(v), { message: "must be a full URL ending in /api" })
    .transform((v) => v.replace(/\/+$/, "")),

  DEFAULT_CITY: z.string().trim().min(1).default("臺北市"),
  TIMEZONE: z
    .string()
    .trim()
    .default("Asia/Taipei")
    .refine(isTimeZone, { message: "must be an IANA time zone such as Asia/Taipei" }),
  BOT_LOCALE: z.enum(LOCALES, { message: `must be one of ${LOCALES.join(", ")}` }).default("zh-TW"),

  MAX_TURNS: int(1, 50, 10),
  CONFIRM_TIMEOUT_SECONDS: int(5, 86400, 300),
  WORKER_CONCURRENCY: int(1, 256, 8),
  ROLE: z.enum(["all", "adapter", "worker"], { message: "must be all, adapter or worker" }).default("all"),

  /** Messages kept per chat in the history (older turns are trimmed at a safe boundary). */
  HISTORY_MAX_MESSAGES: int(2, 400, 40),
  /** Days a quiet chat's history is kept (every new message renews it). */
  HISTORY_TTL_DAYS: int(1, 3650, 30),

  HEALTH_PORT: z.coerce
    .number({ message: "must be a port number" })
    .int()
    .min(1)
    .max(65535)
    .optional()
    .or(z.literal("").transform(() => undefined)),
  LOG_LEVEL: z
    .enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"], {
      message: "must be fatal, error, warn, info, debug, trace or silent",
    })
    .default("info"),
});

/** The validated configuration. Durations are named with their unit (`_SECONDS`, `_DAYS`). */
export type Config = z.output<typeof ConfigSchema>;

/** Seconds a quiet chat's history is kept: `HISTORY_TTL_DAYS` in seconds. */
export function historyTtlSeconds(config: Pick<Config, "HISTORY_TTL_DAYS">): number {
  return config.HISTORY_TTL_DAYS * 86_400;
}

/**
 * Start-up stops with this when the environment is invalid. `problems` holds one line per
 * variable (`NAME: what is wrong`); no line contains a variable's value.
 */
export class ConfigError extends Error {
  /** One line per problem, `NAME: reason`. */
  readonly problems: string[];
  constructor(problems: string[]) {
    super(`Invalid configuration (${problems.length} problem${problems.length === 1 ? "" : "s"}):\n  - ${problems.join("\n  - ")}\nSee .env.example for every variable.`);
    this.name = "ConfigError";
    this.problems = problems;
  }
}

/** What the process is going to do; decides which secrets are required. */
export interface LoadConfigOptions {
  /**
   * `run`: the bot (needs `ANTHROPIC_API_KEY` when a worker runs here);
   * `inspect`: commands such as `npm run tools` and tests, which need no secrets.
   * Default `run`.
   */
  purpose?: "run" | "inspect";
}

/**
 * Validates an environment and returns the configuration.
 *
 * @param env - variables, usually `process.env` (after `.env` was read by the entry point).
 * @throws {ConfigError} listing every invalid or missing variable at once; values are never included.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env, options: LoadConfigOptions = {}): Config {
  const known = Object.fromEntries(Object.keys(ConfigSchema.shape).map((k) => [k, env[k]]));
  const parsed = ConfigSchema.safeParse(known);
  const problems: string[] = [];
  if (!parsed.success) {
    for (const issue of parsed.error.issues) {
      const name = issue.path.join(".") || "(environment)";
      problems.push(`${name}: ${describeIssue(issue)}`);
    }
  }
  if (parsed.success && (options.purpose ?? "run") === "run") {
    const c = parsed.data;
    if (c.ROLE !== "adapter" && !c.ANTHROPIC_API_KEY) {
      problems.push("ANTHROPIC_API_KEY: is required to run a worker (ROLE=all or worker); get one at console.anthropic.com");
    }
    if (c.TELEGRAM_WEBHOOK_URL && !c.TELEGRAM_WEBHOOK_SECRET) {
      problems.push("TELEGRAM_WEBHOOK_SECRET: is required with TELEGRAM_WEBHOOK_URL, so forged updates are refused");
    }
  }
  if (problems.length > 0) throw new ConfigError(problems);
  return parsed.data!;
}

function describeIssue(issue: z.core.$ZodIssue): string {
  // Our own messages never echo the value; zod's defaults for the remaining codes do not either.
  if (issue.code === "invalid_type" && issue.input === undefined) return "is required";
  return issue.message;
}

/** The values of the secret variables that are set, for redaction (see `src/log.ts`). */
export function secretValues(config: Partial<Config>): string[] {
  const values: (string | undefined)[] = SECRET_VARIABLES.map((k) => config[k]);
  if (config.REDIS_URL && URL.canParse(config.REDIS_URL)) {
    const password = new URL(config.REDIS_URL).password;
    values.push(password ? decodeURIComponent(password) : undefined);
  }
  return values.filter((v): v is string => typeof v === "string" && v.length >= 6);
}
