/**
 * Configuration: one zod schema over the environment.
 *
 * Every variable is documented in `docs/configuration.md`, generated from this schema's `.describe()`
 * texts by `npm run docs:config` (checked by `test/docs/configuration.test.ts`); `.env.example`
 * has what a first run needs.
 * {@link loadConfig} reports every problem at once and never prints a secret's value.
 */
import path from "node:path";
import { z } from "zod";
import { MIN_SECRET_LENGTH } from "./log.js";
import { englishCount } from "./i18n.js";

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
  "LINE_CHANNEL_SECRET",
  "LINE_CHANNEL_ACCESS_TOKEN",
  "CWA_API_KEY",
  "REDIS_PASSWORD",
  "STT_API_KEY",
  "TTS_API_KEY",
  "ADMIN_CONSOLE_TOKEN",
] as const;

const optionalString = z
  .string()
  .trim()
  .transform((v) => (v === "" ? undefined : v))
  .optional();

/** The URL in `v` when it parses and uses one of `protocols` (e.g. `["https:"]`), else undefined. */
function parseUrl(v: string, protocols: readonly string[]): URL | undefined {
  if (!URL.canParse(v)) return undefined;
  const url = new URL(v);
  return protocols.includes(url.protocol) ? url : undefined;
}

/** An optional `http://` or `https://` URL; `what` says what it is for, in the message. */
const optionalHttpUrl = (what: string) =>
  optionalString.refine((v) => v === undefined || parseUrl(v, ["http:", "https:"]) !== undefined, {
    message: `must be an http:// or https:// URL (${what})`,
  });

/**
 * `ANTHROPIC_BASE_URL` as the SDK wants it: without trailing slashes and without a final `/v1`
 * (the SDK appends `/v1/messages`; `…/v1` would request `/v1/v1/messages` and get 404).
 */
export function stripApiVersion(v: string | undefined): string | undefined {
  return v?.replace(/\/+$/, "").replace(/\/v1$/i, "");
}

/** True when `v` is an `http(s)` URL whose path ends in `/api` (a trailing slash allowed). */
function isApiBase(v: string): boolean {
  const url = parseUrl(v, ["http:", "https:"]);
  return url !== undefined && /\/api\/*$/.test(url.pathname) && url.search === "" && url.hash === "";
}

/**
 * A whole number written in decimal digits, from `min` to `max` (no default). Every failure says
 * `expected` (what is wanted) and never echoes the value.
 */
const wholeNumber = (min: number, max: number, expected = `must be a whole number from ${min} to ${max}`) =>
  z
    .string({ message: expected })
    .trim()
    .regex(/^\d+$/, { message: expected })
    .transform(Number)
    .pipe(z.number().int({ message: expected }).min(min, { message: expected }).max(max, { message: expected }));

/** {@link wholeNumber} with `fallback` when the variable is unset or blank. */
const int = (min: number, max: number, fallback: number) => wholeNumber(min, max).default(fallback);

const ALWAYS_ALLOW_MESSAGE = "must be a number of days greater than 0 and at most 3650 (fractions allowed, e.g. 0.5)";

const PORT_MESSAGE = "must be a port number from 1 to 65535";

/** A TCP port, 1-65535, written in digits. */
const port = () => wholeNumber(1, 65535, PORT_MESSAGE);

const WEBHOOK_MESSAGE =
  "must be the public https:// address Telegram posts updates to (http:// only with a self-hosted Bot API server set in TELEGRAM_API_ROOT)";

const CLUSTER_NODES_MESSAGE =
  "must list Redis Cluster nodes as host:port separated by commas (or redis://host:port, " +
  "rediss://host:port for TLS, all entries alike), e.g. 10.0.0.1:6379,10.0.0.2:6379";

/**
 * `REDIS_CLUSTER_NODES`: seed nodes `host:port` (an IPv6 host in brackets), each optionally
 * `redis://host:port` or `rediss://host:port` (TLS); every entry must agree on TLS.
 */
function parseClusterNodes(
  v: string | undefined,
  ctx: z.RefinementCtx,
): { nodes: { host: string; port: number }[]; tls: boolean } | undefined {
  if (v === undefined) return undefined;
  const entries = v
    .split(",")
    .map((e) => e.trim())
    .filter((e) => e !== "");
  const parsed = entries.map((entry) =>
    /^(?:(rediss?):\/\/)?(?:\[([0-9A-Fa-f:.]+)\]|([A-Za-z0-9](?:[A-Za-z0-9.-]*[A-Za-z0-9])?)):(\d{1,5})\/?$/.exec(
      entry,
    ),
  );
  const schemes = new Set(parsed.map((m) => m?.[1] === "rediss"));
  if (entries.length === 0 || parsed.some((m) => !m || Number(m[4]) < 1 || Number(m[4]) > 65535) || schemes.size > 1) {
    ctx.addIssue({ code: "custom", message: CLUSTER_NODES_MESSAGE });
    return z.NEVER;
  }
  return { nodes: parsed.map((m) => ({ host: m![2] ?? m![3]!, port: Number(m![4]) })), tls: schemes.has(true) };
}

/** Anything that starts like `scheme://`. */
const SCHEME_PATTERN = /^[a-z][a-z0-9+.-]*:\/\//i;

/**
 * `REDIS_URL`: a `redis://` or `rediss://` URL, or a unix socket path. A relative socket path is
 * resolved against the current folder, so every consumer sees an absolute path.
 */
function normalizeRedisUrl(v: string | undefined, ctx: z.RefinementCtx): string | undefined {
  if (v === undefined) return undefined;
  if (SCHEME_PATTERN.test(v)) {
    if (parseUrl(v, ["redis:", "rediss:"])) return v;
  } else if (!v.includes("://") && !/^[a-z0-9.-]+:\d+$/i.test(v)) {
    return path.resolve(v);
  }
  ctx.addIssue({ code: "custom", message: "must be a redis:// or rediss:// URL, or the path of a unix socket" });
  return z.NEVER;
}

/**
 * `DISCORD_SHARDS`: shard ids and ranges separated by commas (`0,1`, `0-3`, `0-3,8`), as a sorted
 * list. Each id at most once (`0,0` or `0-3,2` is refused). Ids are below 65535 (the largest
 * `DISCORD_SHARD_COUNT`), which also bounds a range's size; the check against
 * `DISCORD_SHARD_COUNT` itself is in {@link loadConfig}.
 */
function parseShardList(v: string | undefined, ctx: z.RefinementCtx): number[] | undefined {
  if (v === undefined) return undefined;
  const ids = new Set<number>();
  for (const part of v.split(",").map((p) => p.trim())) {
    const m = /^(\d{1,12})(?:-(\d{1,12}))?$/.exec(part);
    const from = Number(m?.[1]);
    const to = Number(m?.[2] ?? m?.[1]);
    if (!m || to < from) {
      ctx.addIssue({ code: "custom", message: "must be shard ids and ranges separated by commas, e.g. 0,1 or 0-3" });
      return z.NEVER;
    }
    if (to > MAX_SHARD_ID) {
      ctx.addIssue({
        code: "custom",
        message: `every shard id must be below DISCORD_SHARD_COUNT (at most ${MAX_SHARD_ID + 1})`,
      });
      return z.NEVER;
    }
    for (let id = from; id <= to; id++) {
      if (ids.has(id)) {
        ctx.addIssue({ code: "custom", message: `lists shard ${id} more than once: name each shard id once` });
        return z.NEVER;
      }
      ids.add(id);
    }
  }
  return [...ids].sort((a, b) => a - b);
}

/** Largest shard id: `DISCORD_SHARD_COUNT` is at most 65535. */
const MAX_SHARD_ID = 65534;

function isTimeZone(tz: string): boolean {
  try {
    new Intl.DateTimeFormat("en", { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}

/** Access policies: who the bot serves (see `src/access/policy.ts`). */
export const ACCESS_POLICIES = ["pairing", "allowlist", "open"] as const;
/** One of {@link ACCESS_POLICIES}. */
export type AccessPolicy = (typeof ACCESS_POLICIES)[number];

/** A value that looks like a secret (a bot token, an API key): never echoed in a message. */
function looksLikeSecret(v: string): boolean {
  return (
    /^\d+:[\w-]{20,}$/.test(v) ||
    /^[\w-]{20,}\.[\w-]{4,}\.[\w-]{20,}$/.test(v) ||
    /^sk-/i.test(v) ||
    (v.length >= 32 && /^[\w.+/=-]+$/.test(v))
  );
}

/**
 * A comma list of `platform:id` entries (`ADMIN_USERS`, `ALLOWED_USERS`, `ALLOWED_CHATS`): Telegram
 * ids are integers (chat ids of groups are negative, e.g. `-1001234567890`), Discord ids are
 * snowflakes (15-21 digits). Blank entries are skipped; the result is normalised (`telegram:42`)
 * and without duplicates. A malformed entry is reported by its position, never by its value
 * (it may be a pasted token; the message says so when it looks like one).
 */
const principalList = (kind: "user" | "chat") =>
  z
    .string()
    .optional()
    .transform((v, ctx) => {
      const out: string[] = [];
      const entries = (v ?? "").split(",").map((e) => e.trim());
      entries.forEach((entry, index) => {
        if (entry === "") return;
        const match = /^(telegram|discord):(-?\d{1,21})$/i.exec(entry) ?? /^(line):([UCR][0-9a-f]{32})$/i.exec(entry);
        const platform = match?.[1]?.toLowerCase();
        // A LINE id keeps its letter upper case (U user, C group, R multi-person chat) and its hex lower case.
        const id =
          platform === "line" ? match![2]![0]!.toUpperCase() + match![2]!.slice(1).toLowerCase() : (match?.[2] ?? "");
        const valid =
          platform === "telegram"
            ? (kind === "chat" || !id.startsWith("-")) && id.replace("-", "").length <= 16
            : platform === "line"
              ? kind === "chat" || id.startsWith("U")
              : platform === "discord" && /^\d{15,21}$/.test(id);
        if (!valid) {
          // Named by position, never by value: a pasted token must not reach a log line.
          const form =
            kind === "user"
              ? "telegram:<userId>, discord:<userId> or line:<userId>"
              : "telegram:<chatId>, discord:<guildId>, discord:<channelId> or line:<groupId>";
          ctx.addIssue({
            code: "custom",
            message:
              `must be a comma list of ${form}; entry ${index + 1} of ${entries.length} is not` +
              `${looksLikeSecret(entry) ? " (it looks like a token: remove it)" : ""}`,
          });
          return;
        }
        const normalised = `${platform}:${id}`;
        if (!out.includes(normalised)) out.push(normalised);
      });
      return out;
    });

/** Prices (`MODEL_PRICES`) for the estimated cost in `/usage`: tokens in USD per million, web searches in USD per 1,000. */
export interface ModelPrices {
  input: number;
  output: number;
  cacheWrite: number;
  cacheRead: number;
  /** USD per 1,000 web searches; default {@link DEFAULT_WEB_SEARCH_PRICE}. */
  webSearch: number;
}

/**
 * The Messages API's price of web search, USD per 1,000 searches ("$10 per 1,000 searches, plus
 * standard token costs", https://platform.claude.com/docs/en/agents-and-tools/tool-use/web-search-tool).
 */
export const DEFAULT_WEB_SEARCH_PRICE = 10;

const PRICES_MESSAGE =
  "must be four prices in USD per million tokens: input,output,cache_write,cache_read (e.g. " +
  "15,75,18.75,1.5), optionally a fifth: USD per 1,000 web searches (default 10); for " +
  "several models, entries model=prices separated by ; (e.g. claude-opus-5=15,75,18.75,1.5;" +
  "claude-haiku-5=1,5,1.25,0.1), with at most one entry without a model (the price of every " +
  "other model)";

/**
 * `MODEL_PRICES` as parsed: the default prices (the fields of {@link ModelPrices}: the entry without
 * a model id, else the entry of `ANTHROPIC_MODEL`) and the price of each model named in an entry.
 */
export interface ModelPricing extends ModelPrices {
  /** Prices of the models named in `MODEL_PRICES` (`id=…` entries), by model id; absent when none is named. */
  byModel?: Readonly<Record<string, ModelPrices>>;
}

/** A model id as the Messages API names models (letters, digits, `.`, `_`, `-`, `:`, `@`, `/`), at most 100 characters. */
const MODEL_ID = /^[A-Za-z0-9][A-Za-z0-9._:@/-]{0,99}$/;

/** One price list `input,output,cache_write,cache_read[,web_search]`, or undefined when it is not one. */
function parsePriceList(v: string): ModelPrices | undefined {
  const numbers = v
    .split(",")
    .map((p) => p.trim())
    .map((p) => (/^\d+(\.\d+)?$/.test(p) ? Number(p) : NaN));
  if ((numbers.length !== 4 && numbers.length !== 5) || numbers.some((n) => !Number.isFinite(n))) return undefined;
  const [input, output, cacheWrite, cacheRead, webSearch = DEFAULT_WEB_SEARCH_PRICE] = numbers as [
    number,
    number,
    number,
    number,
    number?,
  ];
  return { input, output, cacheWrite, cacheRead, webSearch };
}

/** The model whose entry stands in for the default until {@link loadConfig} knows `ANTHROPIC_MODEL` (no entry without a model). */
const PROVISIONAL_DEFAULT = Symbol("provisional default model");

/**
 * `MODEL_PRICES`: one price list (every model), or `;`-separated entries `model=prices` plus at
 * most one bare price list (the default). Without a bare list the default is `ANTHROPIC_MODEL`'s
 * entry (checked in {@link loadConfig}).
 */
function parseModelPrices(v: string | undefined, ctx: z.RefinementCtx): ModelPricing | undefined {
  if (v === undefined) return undefined;
  const byModel: Record<string, ModelPrices> = {};
  let base: ModelPrices | undefined;
  let first: string | undefined;
  for (const entry of v
    .split(";")
    .map((e) => e.trim())
    .filter((e) => e !== "")) {
    const eq = entry.indexOf("=");
    const id = eq >= 0 ? entry.slice(0, eq).trim() : undefined;
    const prices = parsePriceList(eq >= 0 ? entry.slice(eq + 1) : entry);
    if (!prices || (id !== undefined && (!MODEL_ID.test(id) || id in byModel)) || (id === undefined && base)) {
      ctx.addIssue({ code: "custom", message: PRICES_MESSAGE });
      return z.NEVER;
    }
    if (id === undefined) base = prices;
    else {
      byModel[id] = prices;
      first ??= id;
    }
  }
  if (!base && first === undefined) {
    ctx.addIssue({ code: "custom", message: PRICES_MESSAGE });
    return z.NEVER;
  }
  const pricing: ModelPricing = { ...(base ?? byModel[first!]!), ...(first !== undefined ? { byModel } : {}) };
  if (!base) Object.defineProperty(pricing, PROVISIONAL_DEFAULT, { value: first, enumerable: false });
  return pricing;
}

/**
 * The prices of `model` (`MODEL_PRICES`): its own entry, else the default; undefined when
 * `MODEL_PRICES` is unset.
 */
export function pricesFor(config: Pick<Config, "MODEL_PRICES">, model: string): ModelPrices | undefined {
  const pricing = config.MODEL_PRICES;
  if (!pricing) return undefined;
  const own = pricing.byModel?.[model];
  if (own) return own;
  const { byModel: _byModel, ...base } = pricing;
  return base;
}

/** A model a conversation may choose (`MODELS`): its id and the label shown in `/settings` (default the id). */
export interface ModelChoice {
  id: string;
  label: string;
}

const MODELS_MESSAGE =
  "must be model ids separated by commas, each optionally with a label after = (e.g. " +
  "claude-opus-5=Opus,claude-haiku-5=Haiku); labels at most 40 characters, each id once";

/** `MODELS`: `id` or `id=label` entries separated by commas (blank entries skipped). `ANTHROPIC_MODEL` is added in {@link loadConfig}. */
function parseModels(v: string | undefined, ctx: z.RefinementCtx): ModelChoice[] | undefined {
  if (v === undefined) return undefined;
  const out: ModelChoice[] = [];
  for (const entry of v
    .split(",")
    .map((e) => e.trim())
    .filter((e) => e !== "")) {
    const eq = entry.indexOf("=");
    const id = (eq >= 0 ? entry.slice(0, eq) : entry).trim();
    const label = eq >= 0 ? entry.slice(eq + 1).trim() : id;
    if (
      !MODEL_ID.test(id) ||
      label === "" ||
      [...label].length > 40 ||
      /[\p{Cc}]/u.test(label) ||
      out.some((m) => m.id === id)
    ) {
      ctx.addIssue({ code: "custom", message: MODELS_MESSAGE });
      return z.NEVER;
    }
    out.push({ id, label });
  }
  return out;
}

/** The zod schema over `process.env`. Use {@link loadConfig} rather than parsing with it directly. */
export const ConfigSchema = z.object({
  ANTHROPIC_API_KEY: optionalString.describe(
    "Messages API key (https://console.anthropic.com). Required where a worker runs (`npm start` with " +
      "`ROLE` all or worker, `npm run chat`); not for `npm run chat -- --demo`.",
  ),
  /**
   * The Messages API endpoint without `/v1` (the SDK adds `/v1/messages`): a trailing `/v1` and
   * trailing slashes are removed, so `https://api.anthropic.com/v1/` works as `https://api.anthropic.com`.
   */
  ANTHROPIC_BASE_URL: optionalHttpUrl("the Messages API endpoint, e.g. https://api.anthropic.com")
    .transform(stripApiVersion)
    .describe(
      "Messages API endpoint (proxies, gateways): the server root, e.g. `https://api.anthropic.com`, " +
        "without `/v1` (a trailing `/v1` is removed; the SDK adds `/v1/messages`). Unset = Anthropic's own.",
    ),
  ANTHROPIC_MODEL: z
    .string()
    .trim()
    .min(1, { message: "must be a model id, e.g. claude-opus-5" })
    .default("claude-opus-5")
    .describe("Model id: the model of every conversation that did not choose another (`/model`)."),
  /**
   * Models a conversation may choose in `/settings` and `/model`: `id` or `id=label`, comma-separated.
   * Always holds `ANTHROPIC_MODEL` (first when `MODELS` leaves it out), the default of every
   * conversation; unset = only `ANTHROPIC_MODEL` (the setting is then not offered).
   */
  MODELS: optionalString
    .transform(parseModels)
    .describe(
      "Models a conversation may choose with `/model` or `/settings`: ids separated by commas, each " +
        "optionally with a label (`claude-opus-5=Opus,claude-haiku-5=Haiku`). `ANTHROPIC_MODEL` is always one " +
        "of them; unset = `ANTHROPIC_MODEL` only (the setting is then not offered). See " +
        "[settings](settings.md).",
    ),
  /** Output budget of one model call, in tokens. */
  ANTHROPIC_MAX_TOKENS: int(256, 64000, 2048).describe("Output budget of one model call, in tokens (256-64000)."),

  TELEGRAM_BOT_TOKEN: optionalString
    .refine((v) => v === undefined || /^\d+:[\w-]{20,}$/.test(v), {
      message: "does not look like a bot token from @BotFather (digits, a colon, then letters)",
    })
    .describe("Telegram bot token from @BotFather (`123456789:AA…`); unset = Telegram off."),
  TELEGRAM_API_ROOT: optionalHttpUrl("a Bot API server root, e.g. https://api.telegram.org").describe(
    "Bot API server root, for a self-hosted Bot API server; unset = `https://api.telegram.org`.",
  ),
  /**
   * Public address Telegram posts updates to. `https://` (Bot API `setWebhook`: "Ports currently
   * supported for webhooks: 443, 80, 88, 8443", HTTPS only); `http://` is accepted only together
   * with `TELEGRAM_API_ROOT`, because a self-hosted Bot API server in `--local` mode allows an
   * HTTP webhook ("Using a Local Bot API Server", https://core.telegram.org/bots/api). That
   * cross-check is in {@link loadConfig}.
   */
  TELEGRAM_WEBHOOK_URL: optionalString
    .refine((v) => v === undefined || parseUrl(v, ["https:", "http:"]) !== undefined, {
      message: WEBHOOK_MESSAGE,
    })
    .describe(
      "Webhook mode instead of long polling: the public `https://` address Telegram posts updates to " +
        "(`http://` only with a self-hosted `TELEGRAM_API_ROOT`). Unset = long polling. See " +
        "[platforms](platforms.md).",
    ),
  /**
   * The webhook's `secret_token` (Bot API `setWebhook`: 1-256 characters, only `A-Z`, `a-z`, `0-9`,
   * `_` and `-`). We require at least 16, so it cannot be guessed.
   */
  TELEGRAM_WEBHOOK_SECRET: optionalString
    .refine((v) => v === undefined || /^[A-Za-z0-9_-]{16,256}$/.test(v), {
      message:
        "must be 16-256 characters of A-Z, a-z, 0-9, _ and - (Bot API setWebhook secret_token), e.g. from: openssl rand -hex 24",
    })
    .describe(
      "The secret Telegram sends back in `X-Telegram-Bot-Api-Secret-Token` (required with " +
        "`TELEGRAM_WEBHOOK_URL`): 16-256 characters of `A-Z a-z 0-9 _ -`, e.g. from `openssl rand -hex 24`.",
    ),
  TELEGRAM_WEBHOOK_PORT: port().default(8443).describe("Local port the webhook server listens on (1-65535)."),

  /**
   * Bot token from the Developer Portal (Bot → Reset Token): three base64url parts joined by dots
   * (the bot's user id, a timestamp, an HMAC), as sent in `Authorization: Bot <token>`
   * (https://discord.com/developers/docs/reference#authentication). Catches the usual mistakes
   * (a "Bot " prefix, the client secret, the application id or public key) before login.
   */
  DISCORD_TOKEN: optionalString
    .refine((v) => v === undefined || /^[\w-]{10,}\.[\w-]{4,}\.[\w-]{10,}$/.test(v), {
      message:
        "does not look like a bot token from the Developer Portal (Bot → Reset Token): three parts " +
        'of letters, digits, - and _ joined by dots, without a "Bot " prefix (not the client ' +
        "secret, application id or public key)",
    })
    .describe(
      "Discord bot token (Developer Portal → Bot → Reset Token): three parts joined by dots, without a `Bot " +
        "` prefix; start-up refuses another shape without printing it. Unset = Discord off.",
    ),
  /** REST base ending in `/api` (discord.js adds `/v10`); a trailing slash is removed. */
  DISCORD_API_URL: optionalString
    .refine((v) => v === undefined || isApiBase(v), {
      message: "must be an http:// or https:// URL ending in /api, e.g. https://discord.com/api",
    })
    .transform((v) => v?.replace(/\/+$/, ""))
    .describe("Discord REST base ending in `/api` (proxies); unset = `https://discord.com/api`."),
  DISCORD_GUILD_ID: optionalString
    .refine((v) => v === undefined || /^\d{15,21}$/.test(v), {
      message: "must be a guild (server) id: 15-21 digits",
    })
    .describe(
      "A guild (server) id: slash commands are registered there only, at once; unset = global commands (can " +
        "take up to an hour to appear).",
    ),
  /**
   * Gateway shards of the bot in all, across every adapter process (discord.js `shardCount`);
   * unset = Discord's recommendation from `GET /gateway/bot`. Discord requires sharding past
   * 2,500 servers: https://discord.com/developers/docs/topics/gateway#sharding
   */
  DISCORD_SHARD_COUNT: wholeNumber(1, 65535)
    .optional()
    .describe(
      "Gateway shards in all, over every adapter process (Discord requires sharding past 2,500 servers); " +
        "unset = Discord's recommendation, all run by this process. See [Discord " +
        "shards](scaling.md#discord-shards).",
    ),
  /** The shard ids this process runs (`0,1`, `0-3`, `0-3,8`), sorted; unset = every shard. Needs `DISCORD_SHARD_COUNT`. */
  DISCORD_SHARDS: optionalString
    .transform(parseShardList)
    .describe(
      "The shard ids this process runs: `0,1`, `0-3` or `0-3,8`; needs `DISCORD_SHARD_COUNT`. Unset = all of them.",
    ),

  /**
   * LINE Messaging API channel secret (LINE Developers console → the channel → Basic settings):
   * the key of the webhook's `x-line-signature` HMAC-SHA256
   * (https://developers.line.biz/en/reference/messaging-api/#signature-validation). 32 hex digits.
   */
  LINE_CHANNEL_SECRET: optionalString
    .refine((v) => v === undefined || /^[0-9a-f]{32}$/i.test(v), {
      message: "must be the channel secret from the LINE Developers console (Basic settings): 32 hex digits",
    })
    .describe(
      "LINE Messaging API channel secret (LINE Developers console → the channel → Basic settings; 32 hex digits): " +
        "checks every webhook's `x-line-signature`. LINE turns on with it and `LINE_CHANNEL_ACCESS_TOKEN`. See [LINE](line.md).",
    ),
  /**
   * LINE channel access token (long-lived, Messaging API tab → Channel access token), sent as
   * `Authorization: Bearer <token>`; LINE turns on with it and `LINE_CHANNEL_SECRET`.
   */
  LINE_CHANNEL_ACCESS_TOKEN: optionalString
    .refine((v) => v === undefined || /^[A-Za-z0-9+/=._-]{20,}$/.test(v), {
      message:
        "does not look like a channel access token from the LINE Developers console (Messaging API → Channel access token)",
    })
    .describe(
      "LINE channel access token (long-lived: Messaging API tab → Channel access token → Issue); unset = LINE off.",
    ),
  /** Port of the LINE webhook server (LINE posts events to the webhook URL set in the console). */
  LINE_WEBHOOK_PORT: port()
    .default(8444)
    .describe("Local port the LINE webhook server listens on (1-65535); must differ from `HTTP_PORT`."),
  /** Path of the LINE webhook (the path of the webhook URL set in the console), e.g. `/line/webhook`. */
  LINE_WEBHOOK_PATH: optionalString
    .refine((v) => v === undefined || /^\/[\w\-./~%]*$/.test(v), {
      message: "must be a URL path beginning with /, e.g. /line/webhook",
    })
    .transform((v) => v ?? "/line/webhook")
    .describe(
      "Path of the LINE webhook: the console's webhook URL is `https://<your host><LINE_WEBHOOK_PATH>` behind your HTTPS proxy.",
    ),
  /**
   * The public HTTPS base URL at which LINE reaches this bot's LINE webhook server, e.g.
   * `https://bot.example.com`; voice replies on LINE are served under it (LINE fetches an audio
   * message's `originalContentUrl`, which must be HTTPS). Unset = no voice replies on LINE.
   */
  LINE_PUBLIC_URL: optionalString
    .refine((v) => v === undefined || /^https:\/\/[^\s/?#]+(\/[^\s?#]*)?$/.test(v), {
      message: "must be an https:// URL without query or fragment, e.g. https://bot.example.com",
    })
    .transform((v) => v?.replace(/\/+$/, ""))
    .describe(
      "Public HTTPS base URL where LINE reaches the LINE webhook server (e.g. `https://bot.example.com`); " +
        "voice replies on LINE are served under it at `<LINE_PUBLIC_URL><dir of LINE_WEBHOOK_PATH>/voice/<id>.mp3` " +
        "for an hour. Unset = no voice replies on LINE.",
    ),
  /** The Messaging API host (`https://api.line.me`); another server (a proxy, a test fake) with this. */
  LINE_API_URL: optionalHttpUrl("the LINE Messaging API host, e.g. https://api.line.me")
    .transform((v) => v?.replace(/\/+$/, ""))
    .describe("LINE Messaging API host (a proxy); unset = `https://api.line.me`."),
  /** The host of message contents (`https://api-data.line.me`: images, audio, files). */
  LINE_DATA_API_URL: optionalHttpUrl("the LINE content host, e.g. https://api-data.line.me")
    .transform((v) => v?.replace(/\/+$/, ""))
    .describe("LINE content host (message pictures, audio, files; a proxy); unset = `https://api-data.line.me`."),
  /**
   * The channel's monthly push-message quota (the plan's free messages, e.g. 200 for the
   * Communication plan in Taiwan); unset = no limit known. Near it (80 %), an answer tries its
   * reply token up to 5 minutes after its event (not only the first 50 s) before pushing, and log
   * lines say so (`adapters/line/outbound.ts`).
   */
  LINE_PUSH_MONTHLY_LIMIT: wholeNumber(1, 100_000_000)
    .optional()
    .describe(
      "The LINE channel plan's monthly push-message quota. From 80 % of it on, an answer tries its free reply token " +
        "up to 5 minutes after the message (not only the first 50 s) before pushing, and each push logs a warning. " +
        "Unset = unknown (reply tokens are tried for 50 s).",
    ),

  /** A `redis://` or `rediss://` URL, or a unix socket path (made absolute). */
  REDIS_URL: optionalString
    .transform(normalizeRedisUrl)
    .describe(
      "`redis://[:password@]host:6379[/db]`, `rediss://…` or the absolute path of a unix socket. Unset = a " +
        "local redis-server started for this folder (data in `.data/redis`). See " +
        "[operations](operations.md#the-local-redis-server).",
    ),
  /** Redis Cluster seed nodes instead of `REDIS_URL` (see {@link parseClusterNodes}); `tls` for `rediss://` entries. */
  REDIS_CLUSTER_NODES: optionalString
    .transform(parseClusterNodes)
    .describe(
      "A Redis Cluster instead of `REDIS_URL`: seed nodes `host:port,host:port,…` (write every entry " +
        "`rediss://host:port` for TLS). See [Redis Cluster](scaling.md#redis-cluster).",
    ),
  /** `AUTH` password of every node of the Redis Cluster (`REDIS_CLUSTER_NODES`). */
  REDIS_PASSWORD: optionalString.describe(
    "The `AUTH` password of every node of the Redis Cluster (`REDIS_CLUSTER_NODES` only).",
  ),

  CWA_API_KEY: optionalString.describe(
    "Central Weather Administration open-data key (https://opendata.cwa.gov.tw, 會員 → 取得授權碼); unset = the " +
      "weather tool is skipped.",
  ),
  /** CWA open-data API base ending in `/api`, without a trailing slash. */
  CWA_API_BASE: z
    .string()
    .trim()
    .default("https://opendata.cwa.gov.tw/api")
    .refine(isApiBase, {
      message: "must be an http:// or https:// URL ending in /api, e.g. https://opendata.cwa.gov.tw/api",
    })
    .transform((v) => v.replace(/\/+$/, ""))
    .describe("CWA open-data API base ending in `/api`."),

  DEFAULT_CITY: z
    .string()
    .trim()
    .min(1, { message: "must name one of the 22 counties and cities, e.g. 臺北市" })
    .default("臺北市")
    .describe(
      "City of the weather when the user names none: one of the 22 counties and cities in any form the " +
        "weather tool accepts (台北, 花莲县, Kaohsiung); checked at start-up, else the weather tool is skipped " +
        "with a warning.",
    ),
  TIMEZONE: z
    .string()
    .trim()
    .default("Asia/Taipei")
    .refine(isTimeZone, { message: "must be an IANA time zone such as Asia/Taipei" })
    .describe("IANA time zone of dates and times, reminders, tasks and the days of the budgets."),
  BOT_LOCALE: z
    .enum(LOCALES, { message: `must be one of ${LOCALES.join(", ")}` })
    .default("zh-TW")
    .describe(
      "Language of the bot's own messages (command replies, prompts, apologies): `zh-TW` or `en`. The model " +
        "answers in the user's language; a conversation can choose its own in `/settings`.",
    ),

  MAX_TURNS: int(1, 50, 10).describe("Most model calls for one answer (1-50)."),
  /**
   * `on`: requests offer the Messages API's web search server tool (run by the API, billed per
   * search; answers cite their sources); `off`: not offered.
   * Source: https://platform.claude.com/docs/en/agents-and-tools/tool-use/web-search-tool
   */
  WEB_SEARCH: z
    .enum(["on", "off"], { message: "must be on or off" })
    .default("on")
    .describe(
      "`on`: the model may search the web with the Messages API's own web search (no extra key; billed per " +
        "search), and answers end with their sources as links; `off`: not offered. See [web " +
        "search](web-search.md).",
    ),
  /** Most web searches the model may make in one model call (the tool's `max_uses`), 1-20. */
  WEB_SEARCH_MAX_USES: int(1, 20, 3).describe("Most web searches in one model call (1-20)."),
  /**
   * `on`: requests offer the Messages API's web fetch server tool, so the model can read a page
   * the user linked; `off` (default): not offered.
   * Source: https://platform.claude.com/docs/en/agents-and-tools/tool-use/web-fetch-tool
   */
  WEB_FETCH: z
    .enum(["on", "off"], { message: "must be on or off" })
    .default("off")
    .describe(
      "`on`: the model may read a page or PDF the user linked (the Messages API's web fetch); `off`: not offered.",
    ),
  /**
   * `on` (default): requests offer the Messages API's memory tool (`memory_20250818`, run by the
   * bot on the scope's files under `/memories`: the speaker's personal memory in a private chat,
   * the group's shared memory in a group), and each request carries that memory as data; `off`:
   * no memory tool, no memory in requests (what is stored stays). See `src/memory/`.
   * Source: https://platform.claude.com/docs/en/agents-and-tools/tool-use/memory-tool
   */
  MEMORY: z
    .enum(["on", "off"], { message: "must be on or off" })
    .default("on")
    .describe(
      "`on`: the bot keeps lasting facts with the Messages API's memory tool, per person in private chats " +
        "and per group in groups; `off`: no memory tool and no memory in requests (what is stored stays). See " +
        "[memory](memory.md).",
    ),
  /** Most bytes of memory per scope (UTF-8 bytes of every file's path and text), 1024 to 262144; a write past it is refused with a tool error. */
  MEMORY_MAX_BYTES: int(1024, 262_144, 16_384).describe(
    "Most bytes of memory per person or group (UTF-8 bytes of every file's path and text), 1024-262144; a " +
      "write past it is refused and the model told how much room is left.",
  ),
  /** `on`: answers are streamed into the chat as the model writes them; `off`: sent when complete. */
  STREAMING: z
    .enum(["on", "off"], { message: "must be on or off" })
    .default("on")
    .describe(
      "`on`: answers appear while the model writes them; `off`: sent when complete. A conversation can turn " +
        "it off for itself in `/settings`.",
    ),
  /**
   * Least time between two edits (or drafts) of one streamed message, in ms (100-10000). The final
   * answer may show up to one interval after the model finishes (its edit waits out the interval
   * of the message's last edit), hence the low maximum.
   */
  STREAM_EDIT_INTERVAL_MS: int(100, 10_000, 1000).describe(
    "Least time between two edits (or drafts) of one streamed message, in ms (100-10000). The final " +
      "answer may appear up to one interval after the model finishes.",
  ),
  /**
   * Seconds one answer may take, from when the worker starts on the message to its delivery (model calls, tools, 429
   * waits); then the user gets a short apology.
   */
  ANSWER_DEADLINE_SECONDS: int(2, 3600, 180).describe(
    "Seconds one answer may take (model calls, tools, waiting out a platform's 429 `retry_after`), " +
      "2-3600; past it the model call is aborted, the user gets a short apology and the conversation moves " +
      "on. See [one deadline per answer](internals.md#one-deadline-per-answer).",
  ),
  /**
   * Seconds a streamed model call may stay silent (1-600): before its first event (the first byte)
   * and between two events. Past it the connection counts as lost and the call is retried like
   * any broken stream, within `ANSWER_DEADLINE_SECONDS`.
   */
  STREAM_IDLE_SECONDS: int(1, 600, 30).describe(
    "Seconds a streamed model call may stay silent (before its first event, or between two events), " +
      "1-600; past it the connection counts as lost and the call is retried, within " +
      "`ANSWER_DEADLINE_SECONDS`.",
  ),
  CONFIRM_TIMEOUT_SECONDS: int(5, 86400, 300).describe(
    "How long an approval prompt stays open, in seconds (5-86400). See [approvals](approvals.md).",
  ),
  /**
   * Days an "always allow" grant lasts (requester × tool × conversation); a decimal number greater
   * than 0 and at most 3650. Fractions are allowed (`0.5` = 12 hours; tests use a few seconds).
   */
  ALWAYS_ALLOW_DAYS: z
    .string({ message: ALWAYS_ALLOW_MESSAGE })
    .trim()
    .regex(/^\d+(\.\d+)?$/, { message: ALWAYS_ALLOW_MESSAGE })
    .transform(Number)
    .pipe(z.number().gt(0, { message: ALWAYS_ALLOW_MESSAGE }).max(3650, { message: ALWAYS_ALLOW_MESSAGE }))
    .default(30)
    .describe(
      'How long an "always allow" grant lasts (that person, that tool, that conversation), in days; fractions allowed (`0.5` = 12 hours), at most 3650.',
    ),
  /** Seconds a reminder's snooze button puts it off (1 s to 1 day). */
  REMINDER_SNOOZE_SECONDS: int(1, 86400, 600).describe(
    "How long a reminder's snooze button puts it off, in seconds (1-86400).",
  ),
  /** Scheduled tasks one person may have (schedule_task refuses one more; paused ones count), 1-100. */
  MAX_TASKS_PER_USER: int(1, 100, 10).describe(
    "Scheduled tasks one person may have (paused ones count), 1-100. See [tasks](tasks.md).",
  ),
  /** Path of the MCP servers file (`mcpServers` JSON, see `src/mcp/config.ts`); unset = `mcp.json` at the project root when it exists. */
  MCP_CONFIG: optionalString.describe(
    "Path of the MCP servers file (`mcpServers` JSON); unset = `mcp.json` at the project root when it " +
      "exists. See [MCP servers](mcp.md).",
  ),
  WORKER_CONCURRENCY: int(1, 256, 8).describe(
    "Jobs in parallel per worker process (one conversation is always answered one message at a time), 1-256.",
  ),
  /**
   * Seconds a stopping worker (SIGTERM, Ctrl-C) waits for the answers it is writing (1-3600). Past
   * it the answers still running are marked interrupted and handed back to the queue: the next
   * worker does them again, not counted as a crash (`ChatWorker.interrupt`).
   */
  SHUTDOWN_WAIT_SECONDS: int(1, 3600, 30).describe(
    "Seconds a stopping worker (SIGTERM, Ctrl-C) waits for the answers it is writing, 1-3600; past it they " +
      "are handed back to the queue as interrupted and done again by the next worker, not counted as a crash. " +
      "Keep it under the container's stop grace period (`stop_grace_period`, 45 s in docker-compose.yml). " +
      "See [operations](operations.md).",
  ),
  ROLE: z
    .enum(["all", "adapter", "worker"], { message: "must be all, adapter or worker" })
    .default("all")
    .describe(
      "`all`: adapters and a worker in one process; `adapter`: receive messages only; `worker`: answer them " +
        "only. See [scaling](scaling.md).",
    ),

  /**
   * Base URL of an OpenAI-compatible speech-to-text API, e.g. `https://api.openai.com/v1`, Groq's
   * `https://api.groq.com/openai/v1` or a self-hosted whisper server; the worker posts to
   * `{STT_BASE_URL}/audio/transcriptions`. Unset = voice messages and audio files are refused
   * with a short answer. Trailing slashes are removed.
   * Source: https://platform.openai.com/docs/api-reference/audio/createTranscription
   */
  STT_BASE_URL: optionalHttpUrl("an OpenAI-compatible transcription API, e.g. https://api.openai.com/v1")
    .transform((v) => v?.replace(/\/+$/, ""))
    .describe(
      "An OpenAI-compatible transcription API (speech to text) for voice messages and audio files, e.g. " +
        "`https://api.openai.com/v1`, `https://api.groq.com/openai/v1` or a self-hosted whisper server; unset " +
        "= voice is not read (a short answer). See [voice](voice.md).",
    ),
  /** Bearer key of the transcription API (secret: redacted from every log line); unset = no `Authorization` header (a self-hosted server). */
  STT_API_KEY: optionalString.describe(
    "Its API key, sent as `Authorization: Bearer …`; unset = no key sent (a self-hosted server).",
  ),
  /** Transcription model id sent as `model`. */
  STT_MODEL: z
    .string()
    .trim()
    .min(1, { message: "must be a transcription model id, e.g. whisper-1" })
    .default("whisper-1")
    .describe("Transcription model (`whisper-1`, `gpt-4o-mini-transcribe`, Groq's `whisper-large-v3-turbo`, …)."),
  /** Longest voice message or audio file transcribed, in seconds (the platform's announced duration, checked before any download). */
  MAX_VOICE_SECONDS: int(1, 7200, 300).describe(
    "Longest voice message or audio file transcribed, in seconds (1-7200), checked from the platform's " +
      "announced duration before anything is downloaded.",
  ),

  /**
   * Base URL of an OpenAI-compatible text-to-speech API, e.g. `https://api.openai.com/v1` or a
   * self-hosted server; the worker posts to `{TTS_BASE_URL}/audio/speech`. Unset = no voice
   * replies (the `/settings` voice choice is not offered). Trailing slashes are removed.
   * Source: https://platform.openai.com/docs/api-reference/audio/createSpeech
   */
  TTS_BASE_URL: optionalHttpUrl("an OpenAI-compatible speech API, e.g. https://api.openai.com/v1")
    .transform((v) => v?.replace(/\/+$/, ""))
    .describe(
      "An OpenAI-compatible speech API (text to speech) for voice replies, e.g. `https://api.openai.com/v1` " +
        "or a self-hosted server; unset = no voice replies. See [voice](voice.md).",
    ),
  /** Bearer key of the speech API (secret: redacted from every log line); unset = no `Authorization` header. */
  TTS_API_KEY: optionalString.describe(
    "Its API key, sent as `Authorization: Bearer …`; unset = no key sent (a self-hosted server).",
  ),
  /** Speech model id sent as `model`. */
  TTS_MODEL: z
    .string()
    .trim()
    .min(1, { message: "must be a speech model id, e.g. tts-1" })
    .default("tts-1")
    .describe("Speech model (`tts-1`, `tts-1-hd`, `gpt-4o-mini-tts`, or a self-hosted server's)."),
  /** Voice id sent as `voice`. */
  TTS_VOICE: z
    .string()
    .trim()
    .min(1, { message: "must be a voice id, e.g. alloy" })
    .default("alloy")
    .describe("Voice of the speech model (`alloy`, `nova`, `shimmer`, … or a self-hosted server's)."),
  /**
   * Most characters (code points) of an answer spoken in a voice reply, 100-4000; a longer answer
   * speaks its first part and says the rest is in the text (the API takes at most 4,096).
   */
  MAX_TTS_CHARACTERS: int(100, 4000, 1000).describe(
    "Most characters of an answer spoken in a voice reply (100-4000); a longer answer speaks its first part " +
      "and says the rest is in the text message.",
  ),

  /** Images accepted in one message (a Telegram album counts as one message); more are refused with a short answer. */
  MAX_IMAGES_PER_MESSAGE: int(1, 20, 5).describe(
    "Images accepted in one message (a Telegram album is one message), 1-20; more get a short answer. See " +
      "[files](files.md).",
  ),
  /**
   * How long after a Telegram album's latest photo or file the worker takes the album, in ms
   * (200-10000): items further apart than this (a slow upload each) become separate messages. The
   * worker waits at most 10 s from the album's first item however many keep arriving.
   */
  ALBUM_QUIET_MS: int(200, 10_000, 3000).describe(
    "How long after a Telegram album's latest photo or file the worker takes the album, in ms " +
      "(200-10000); the worker waits at most 10 s from the album's first item.",
  ),

  /** Messages kept per chat in the history (older turns are trimmed at a safe boundary). */
  HISTORY_MAX_MESSAGES: int(2, 400, 40).describe(
    "Messages of history kept per conversation (a chat or a Telegram topic), 2-400; older turns are left " +
      "out and summarised.",
  ),
  /** Days a quiet chat's history is kept (every new message renews it). */
  HISTORY_TTL_DAYS: int(1, 3650, 30).describe(
    "Days a quiet conversation is remembered (every new message renews it), 1-3650.",
  ),
  /**
   * Compaction threshold, in tokens of the conversation's last model request (input + cache reads +
   * cache writes of the answer's last call): past it, after the answer, the older part of the
   * history is summarised in the background (see `src/compaction/`). 100 to 10 000 000.
   */
  COMPACT_AT_TOKENS: int(100, 10_000_000, 60_000).describe(
    "Compaction threshold: once the conversation's last model request (input + cache reads + cache " +
      "writes) reaches this many tokens, its older turns are summarised in the background; 100 to " +
      "10,000,000. See [compaction](compaction.md).",
  ),
  /** User turns (with their answers) a compaction keeps verbatim after the summary, 1-100. */
  COMPACT_KEEP_TURNS: int(1, 100, 6).describe(
    "User turns (with their answers) a compaction keeps verbatim after the summary, 1-100.",
  ),

  /** Who is served: `pairing` (default), `allowlist` or `open` (see docs/access.md). */
  ACCESS_POLICY: z
    .enum(ACCESS_POLICIES, { message: "must be pairing, allowlist or open" })
    .default("pairing")
    .describe(
      "Who is served: `pairing` (strangers get a code you approve), `allowlist` (only those listed or " +
        "allowed) or `open` (everybody). See [access and budgets](access.md).",
    ),
  /** Bot admins (`telegram:<userId>`, `discord:<userId>`, `line:<userId>`): always served, no rate limit or budget, admin commands. */
  ADMIN_USERS: principalList("user").describe(
    "Bot admins, a comma list of `telegram:<userId>` / `discord:<userId>` / `line:<userId>` (`U` and 32 hex " +
      "digits): always served, no rate limit " +
      "or user budget, admin commands (`/approve`, `/enable`, `/disable`, `/usage all`).",
  ),
  /** Users served in DMs besides those paired or allowed with `npm run access`. */
  ALLOWED_USERS: principalList("user").describe(
    "Users served in DMs, same form (added to those approved or allowed at run time with `npm run access`).",
  ),
  /** Groups served: `telegram:<chatId>`, `discord:<guildId>` (a whole server), `discord:<channelId>` or `line:<groupId>`. */
  ALLOWED_CHATS: principalList("chat").describe(
    "Groups served: `telegram:<chatId>`, `discord:<guildId>` (a whole server), `discord:<channelId>` or " +
      "`line:<groupId>` (`C`, or `R` for a multi-person chat, and 32 hex digits), comma-separated.",
  ),
  /** Messages one user may send per minute, across chats and platforms (admins: no limit). */
  RATE_LIMIT_PER_MINUTE: int(1, 10_000, 10).describe(
    "Messages per user per minute, across chats and platforms (admins: no limit), 1-10000.",
  ),
  /**
   * Unanswered messages one conversation may hold; more are refused, with a short "busy" answer at
   * most once per `BUSY_NOTICE_SECONDS` (60, `src/access/gate.ts`) per conversation.
   */
  MAX_QUEUED_PER_CHAT: int(1, 10_000, 20).describe(
    'Unanswered messages one conversation may hold; more are refused, with a short "busy" answer at most once a minute per conversation (1-10000).',
  ),
  /**
   * Budget tokens one user may use per day in `TIMEZONE`; 0 = no limit. Budget tokens are billed-
   * equivalent input tokens (`budgetTokensOf`, `src/usage/store.ts`): input × 1, cache writes × 1.25,
   * cache reads × 0.1, output × the model's output/input price ratio (`MODEL_PRICES`, else 5). The
   * default holds about 200 short turns a day (`npm run bench -- --cost`, docs/access.md).
   */
  USER_DAILY_TOKENS: int(0, 1_000_000_000_000, 330_000).describe(
    "Budget tokens per user per day (days in `TIMEZONE`); `0` = no limit. Budget tokens are what a person " +
      "is billed, as input tokens: input × 1, cache writes × 1.25, cache reads × 0.1, output × the model's " +
      "output/input price ratio from `MODEL_PRICES` (5 when unset). The default holds about 200 short turns a day.",
  ),
  /** Budget tokens (as {@link USER_DAILY_TOKENS} counts them) the whole bot may use per day; 0 or unset = no limit. */
  GLOBAL_DAILY_TOKENS: int(0, 1_000_000_000_000, 0).describe(
    "Budget tokens (counted as for `USER_DAILY_TOKENS`) per day for the whole bot; `0` or unset = no limit.",
  ),
  /**
   * `input,output,cache_write,cache_read` in USD per million tokens, optionally `,web_search` in
   * USD per 1,000 searches (default {@link DEFAULT_WEB_SEARCH_PRICE}); unset = no cost shown. For
   * several models, `;`-separated `model=prices` entries and at most one bare list (the default);
   * see {@link parseModelPrices} and {@link pricesFor}.
   */
  MODEL_PRICES: optionalString
    .transform(parseModelPrices)
    .describe(
      "Prices for the estimated cost in `/usage`: `input,output,cache_write,cache_read` in USD per million " +
        "tokens, optionally `,web_search` in USD per 1,000 searches (default 10). With several `MODELS`, " +
        "`model=prices` entries separated by `;` and at most one list without a model for every other model " +
        "(`15,75,18.75,1.5;claude-haiku-5=1,5,1.25,0.1`). Unset = no cost shown.",
    ),

  /**
   * Port of the bot's HTTP server for operators (`/health`, `/metrics`, the console at `/admin`);
   * unset or blank = off. {@link loadConfig} fills it from {@link HEALTH_PORT}, its old name.
   */
  HTTP_PORT: port()
    .optional()
    .describe(
      "Port of the bot's HTTP server for operators, on `HTTP_HOST`: `GET /health` (200 or 503) and " +
        "`GET /metrics` (Prometheus), both unauthenticated, and the console at `/admin` (`ADMIN_CONSOLE`); " +
        "keep it private; must differ from `TELEGRAM_WEBHOOK_PORT` and `LINE_WEBHOOK_PORT`. Unset = off. " +
        "`HEALTH_PORT` is its old name and still works. See [operations](operations.md#what-health-means).",
    ),
  /** The old name of {@link HTTP_PORT}: either may be set (both only to the same port); both hold the port after {@link loadConfig}. */
  HEALTH_PORT: port()
    .optional()
    .describe(
      "Old name of `HTTP_PORT`, still read: set either (both only to the same port; two different ports are " +
        "refused at start-up).",
    ),
  /**
   * Address the webhook and health servers listen on (an IP address or host name, e.g. `127.0.0.1`
   * behind a reverse proxy on the same machine); unset = `127.0.0.1` for the health server
   * (`/metrics` has no authentication), every interface for the webhook.
   */
  HTTP_HOST: optionalString
    .refine(
      (v) =>
        v === undefined ||
        /^(?:[A-Za-z0-9](?:[A-Za-z0-9.-]{0,251}[A-Za-z0-9])?|[0-9A-Fa-f.]*:[0-9A-Fa-f.]*:[0-9A-Fa-f:.]*)$/.test(v),
      {
        message: "must be an IP address or host name to listen on, e.g. 127.0.0.1, 0.0.0.0 or ::",
      },
    )
    .describe(
      "Address the webhook and health servers listen on, e.g. `127.0.0.1` behind a local reverse proxy, or " +
        "`0.0.0.0` for a Prometheus on another machine. Unset = `127.0.0.1` for the health server, every " +
        "interface for the webhook.",
    ),
  /** `on`: the operator's web console at `/admin` of the HTTP server (`HTTP_PORT`, `HTTP_HOST`); see docs/console.md. */
  ADMIN_CONSOLE: z
    .enum(["on", "off"], { message: "must be on or off" })
    .default("off")
    .describe(
      "`on`: the operator's web console at `/admin` on the HTTP server (`HTTP_PORT`, on `HTTP_HOST`): " +
        "queues, usage and cost, tools, tasks and reminders, access, memory, traces. Needs `HTTP_PORT`. " +
        "See [the console](console.md).",
    ),
  /** The console's login token (at least 32 characters); unset = a one-time login link printed at start-up. */
  ADMIN_CONSOLE_TOKEN: optionalString
    .refine((v) => v === undefined || v.length >= 32, {
      message: "must be at least 32 characters (e.g. the output of `openssl rand -hex 24`)",
    })
    .describe(
      "Token that logs in to the console (at least 32 characters; a secret, never logged). Unset = each start " +
        "prints a one-time login link valid for 10 minutes.",
    ),
  LOG_LEVEL: z
    .enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"], {
      message: "must be fatal, error, warn, info, debug, trace or silent",
    })
    .default("info")
    .describe("How much is logged: `fatal`, `error`, `warn`, `info`, `debug`, `trace` or `silent`."),
  /**
   * `on`: log lines may show message content — what people wrote, answers, tool inputs and results,
   * transcripts, file names, MCP servers' output (at debug mostly) — a privacy choice of the operator,
   * for debugging. `off` (default): no message content in the log at any level.
   */
  LOG_CONTENT: z
    .enum(["on", "off"], { message: "must be on or off" })
    .default("off")
    .describe(
      "`on`: log lines may show message content (people's messages, answers, tool inputs and results, " +
        "transcripts, file names, MCP servers' output), a privacy choice of the operator; `off`: never, at " +
        "any level. See [logs](operations.md#logs).",
    ),
  /**
   * The OpenTelemetry collector that receives the bot's traces over OTLP/HTTP (JSON), the standard
   * variable's meaning: the base URL, to which `/v1/traces` is appended. Unset = no tracing (the
   * OpenTelemetry packages are not even loaded). Source:
   * https://opentelemetry.io/docs/specs/otel/protocol/exporter/
   */
  OTEL_EXPORTER_OTLP_ENDPOINT: optionalHttpUrl("an OTLP/HTTP collector, e.g. http://127.0.0.1:4318")
    .transform((v) => v?.replace(/\/+$/, ""))
    .describe(
      "OpenTelemetry collector (OTLP/HTTP) for traces of each answer: model calls and tool calls as GenAI " +
        "spans, e.g. `http://127.0.0.1:4318` (`/v1/traces` is appended). Unset = off. See " +
        "[telemetry](telemetry.md).",
    ),
  /** `service.name` of the bot's spans (the standard variable); default `taiwan-tool-bot`. */
  OTEL_SERVICE_NAME: optionalString
    .refine((v) => v === undefined || /^[A-Za-z0-9._:/-]{1,100}$/.test(v), {
      message: "must be a name of at most 100 letters, digits and . _ : / -, e.g. taiwan-tool-bot",
    })
    .describe("`service.name` of the bot's spans (with `OTEL_EXPORTER_OTLP_ENDPOINT`). Unset = `taiwan-tool-bot`."),
  /**
   * `on`: spans carry previews of message content (people's messages, answers, tool inputs and
   * results, redacted and cut to 300 characters); `off` (default): token counts, names and timings only.
   */
  OTEL_CAPTURE_CONTENT: z
    .enum(["on", "off"], { message: "must be on or off" })
    .default("off")
    .describe(
      "`on`: OpenTelemetry spans carry previews of message content (people's messages, answers, tool " +
        "inputs and results; redacted, at most 300 characters each), a privacy choice of the operator; " +
        "`off`: never. See [telemetry](telemetry.md).",
    ),
});

/**
 * The validated configuration. Durations are named with their unit (`_SECONDS`, `_DAYS`).
 * `MODELS` always lists `ANTHROPIC_MODEL` ({@link loadConfig} adds it).
 */
export type Config = Omit<z.output<typeof ConfigSchema>, "MODELS"> & { MODELS: ModelChoice[] };

/** The label of `model` in `MODELS`, else the id itself. */
export function modelLabel(config: Pick<Config, "MODELS">, model: string): string {
  return config.MODELS.find((m) => m.id === model)?.label ?? model;
}

/** Seconds a quiet chat's history is kept: `HISTORY_TTL_DAYS` in seconds. */
export function historyTtlSeconds(config: Pick<Config, "HISTORY_TTL_DAYS">): number {
  return config.HISTORY_TTL_DAYS * 86_400;
}

/**
 * How long an "always allow" grant lasts, in ms: `ALWAYS_ALLOW_DAYS` × 86 400 000, rounded, at
 * least 1000 (one second).
 */
export function alwaysAllowMs(config: Pick<Config, "ALWAYS_ALLOW_DAYS">): number {
  return Math.max(1000, Math.round(config.ALWAYS_ALLOW_DAYS * 86_400_000));
}

/**
 * Start-up stops with this when the environment is invalid. `problems` holds one line per
 * variable (`NAME: what is wrong`); no line contains a variable's value.
 */
export class ConfigError extends Error {
  /** One line per problem, `NAME: reason`. */
  readonly problems: string[];
  constructor(problems: string[]) {
    super(
      `Invalid configuration (${englishCount(problems.length, "problem")}):\n  ` +
        `- ${problems.join("\n  - ")}\nSee docs/configuration.md for every variable.`,
    );
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
 * Validates an environment and returns the configuration. A blank variable (`MAX_TURNS=`, as in
 * `.env.example`) counts as unset, so its default applies.
 *
 * @param env - variables, usually `process.env` (after `.env` was read by the entry point).
 * @throws {ConfigError} listing every invalid or missing variable at once, each with what is
 *   expected; values are never included.
 */
export function loadConfig(env: NodeJS.ProcessEnv = process.env, options: LoadConfigOptions = {}): Config {
  const known: Record<string, string | undefined> = {};
  for (const name of Object.keys(ConfigSchema.shape)) {
    const raw = env[name]?.trim();
    known[name] = raw === "" ? undefined : raw;
  }
  const parsed = ConfigSchema.safeParse(known);
  const problems = new Map<string, string>();
  const report = (name: string, reason: string) => {
    if (!problems.has(name)) problems.set(name, reason);
  };
  // A shard id past every possible count, with a valid DISCORD_SHARD_COUNT set: answer with that count.
  const shardCount = /^\d{1,5}$/.test(known.DISCORD_SHARD_COUNT ?? "") ? Number(known.DISCORD_SHARD_COUNT) : 0;
  const belowCount = (count: number) =>
    `every shard id must be below DISCORD_SHARD_COUNT (${count}): shards are numbered 0 to ${count - 1}`;
  // HTTP_PORT, or HEALTH_PORT (its old name): reported under the name that was set.
  const httpPort = known.HTTP_PORT ?? known.HEALTH_PORT;
  const portName = known.HTTP_PORT ? "HTTP_PORT" : "HEALTH_PORT";
  if (
    known.HTTP_PORT &&
    known.HEALTH_PORT &&
    (/^\d+$/.test(known.HTTP_PORT) && /^\d+$/.test(known.HEALTH_PORT)
      ? Number(known.HTTP_PORT) !== Number(known.HEALTH_PORT)
      : known.HTTP_PORT !== known.HEALTH_PORT)
  ) {
    report(
      "HTTP_PORT",
      `is ${known.HTTP_PORT.slice(0, 10)} but HEALTH_PORT (its old name) is ${known.HEALTH_PORT.slice(0, 10)}: ` +
        "the bot has one HTTP server for /health, /metrics and /admin; set HTTP_PORT only (or both to the same port)",
    );
  }
  if (known.TELEGRAM_WEBHOOK_URL && httpPort && Number(known.TELEGRAM_WEBHOOK_PORT ?? 8443) === Number(httpPort)) {
    report(
      portName,
      "must differ from TELEGRAM_WEBHOOK_PORT: the webhook and /health + /metrics are two " +
        "servers, each on its own port (and /metrics should stay private while the webhook is " +
        "public)",
    );
  }
  if (known.ADMIN_CONSOLE === "on" && !httpPort) {
    report(
      "ADMIN_CONSOLE",
      "needs HTTP_PORT (or its old name HEALTH_PORT): the console is served by the bot's HTTP server, at /admin on that port",
    );
  }
  if (!parsed.success) {
    for (const issue of parsed.error.issues) {
      const name = issue.path.map(String).join(".") || "(environment)";
      const shardsPastCount =
        name === "DISCORD_SHARDS" &&
        issue.message.startsWith("every shard id") &&
        shardCount >= 1 &&
        shardCount <= MAX_SHARD_ID + 1;
      report(
        name,
        known[name] === undefined && name in known
          ? "is required"
          : shardsPastCount
            ? belowCount(shardCount)
            : issue.message,
      );
    }
  }
  if (parsed.success && parsed.data.DISCORD_SHARDS) {
    const count = parsed.data.DISCORD_SHARD_COUNT;
    if (count === undefined) {
      report(
        "DISCORD_SHARDS",
        "needs DISCORD_SHARD_COUNT (the shards of all processes together): every process must " +
          "split the same count, and Discord's recommendation can change between starts",
      );
    } else if (parsed.data.DISCORD_SHARDS.some((id) => id >= count)) {
      report("DISCORD_SHARDS", belowCount(count));
    }
  }
  const webhook = known.TELEGRAM_WEBHOOK_URL;
  if (webhook && !known.TELEGRAM_API_ROOT && URL.canParse(webhook) && new URL(webhook).protocol !== "https:") {
    report("TELEGRAM_WEBHOOK_URL", WEBHOOK_MESSAGE);
  }
  if (known.REDIS_URL && known.REDIS_CLUSTER_NODES)
    report(
      "REDIS_CLUSTER_NODES",
      "cannot be used together with REDIS_URL: set REDIS_URL for one Redis, REDIS_CLUSTER_NODES for a Redis Cluster",
    );
  if (known.REDIS_PASSWORD && !known.REDIS_CLUSTER_NODES) {
    report(
      "REDIS_PASSWORD",
      "is used only with REDIS_CLUSTER_NODES; for one Redis put the password in REDIS_URL (redis://:password@host:port)",
    );
  }
  if (Boolean(known.LINE_CHANNEL_SECRET) !== Boolean(known.LINE_CHANNEL_ACCESS_TOKEN)) {
    const missing = known.LINE_CHANNEL_SECRET ? "LINE_CHANNEL_ACCESS_TOKEN" : "LINE_CHANNEL_SECRET";
    report(
      missing,
      "is required with the other LINE_CHANNEL_ variable: LINE needs both the channel secret (webhook signatures) and the channel access token (replies)",
    );
  }
  if (known.LINE_CHANNEL_ACCESS_TOKEN && httpPort && Number(known.LINE_WEBHOOK_PORT ?? 8444) === Number(httpPort)) {
    report(portName, "must differ from LINE_WEBHOOK_PORT: the LINE webhook and /health + /metrics are two servers");
  }
  if ((options.purpose ?? "run") === "run") {
    if (known.ROLE !== "adapter" && !known.ANTHROPIC_API_KEY) {
      report("ANTHROPIC_API_KEY", "is required to run a worker (ROLE=all or worker); get one at console.anthropic.com");
    }
    if (webhook && !known.TELEGRAM_WEBHOOK_SECRET) {
      report("TELEGRAM_WEBHOOK_SECRET", "is required with TELEGRAM_WEBHOOK_URL, so forged updates are refused");
    }
  }
  const pricing = parsed.success ? parsed.data.MODEL_PRICES : undefined;
  const provisional = pricing
    ? (pricing as unknown as Record<symbol, string | undefined>)[PROVISIONAL_DEFAULT]
    : undefined;
  if (pricing && provisional !== undefined && !pricing.byModel?.[parsed.data!.ANTHROPIC_MODEL]) {
    report(
      "MODEL_PRICES",
      "needs a price for ANTHROPIC_MODEL: an entry for it (model=prices), or a price list without a model id for every model not named",
    );
  }
  if (problems.size > 0) throw new ConfigError([...problems].map(([name, reason]) => `${name}: ${reason}`));
  const data = parsed.data!;
  const defaultModel = data.ANTHROPIC_MODEL;
  const models = data.MODELS ?? [];
  const MODELS = models.some((m) => m.id === defaultModel)
    ? models
    : [{ id: defaultModel, label: defaultModel }, ...models];
  const MODEL_PRICES =
    pricing && provisional !== undefined ? { ...pricing.byModel![defaultModel]!, byModel: pricing.byModel! } : pricing;
  const HTTP_PORT = data.HTTP_PORT ?? data.HEALTH_PORT;
  return { ...data, MODELS, MODEL_PRICES, HTTP_PORT, HEALTH_PORT: HTTP_PORT };
}

/** The values of the secret variables that are set, for redaction (see `src/log.ts`). */
export function secretValues(config: Partial<Config>): string[] {
  const values: (string | undefined)[] = SECRET_VARIABLES.map((k) => config[k]);
  if (config.REDIS_URL && URL.canParse(config.REDIS_URL)) {
    const password = new URL(config.REDIS_URL).password;
    values.push(password ? decodeURIComponent(password) : undefined);
  }
  return values.filter((v): v is string => typeof v === "string" && v.length >= MIN_SECRET_LENGTH);
}
