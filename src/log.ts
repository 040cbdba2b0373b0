/**
 * Logging with pino: JSON lines in production, readable lines (pino-pretty) when stdout is a terminal.
 *
 * Secrets are kept out twice: fields named like credentials are redacted by path, and the values
 * registered with {@link registerSecrets} (bot tokens, API keys) are replaced by `[redacted]`
 * wherever they appear in a serialised line, including error messages and stacks.
 *
 * Message content (what people wrote, answers, tool inputs and results, transcripts, file names,
 * MCP servers' output) stays out of the log at every level unless the operator chose
 * `LOG_CONTENT=on` ({@link CreateLoggerOptions.content}), a privacy choice. A log call that has
 * content to show puts it under the key {@link CONTENT_KEY} (`log.debug({ content: { text } }, …)`),
 * which is replaced by {@link CONTENT_HIDDEN} otherwise; and an error is logged with its message,
 * stack, cause and plain fields only: the objects a client library hangs on it (grammY's `payload`,
 * discord.js's `requestBody`, a request's body) are left out, since they hold the text sent.
 */
import { pino, type Logger, type LoggerOptions } from "pino";

export type { Logger } from "pino";

const secrets = new Set<string>();

/** Shortest secret redacted everywhere, in characters; shorter values would redact ordinary words. */
export const MIN_SECRET_LENGTH = 6;

/**
 * The forms of a secret that redaction looks for: the value as written, and each trimmed line of a
 * multi-line value (a PEM key, so a value split across lines and joined again is still found),
 * each also URL-encoded (`encodeURIComponent` and `encodeURI`, with upper- and lower-case `%xx`:
 * the same secret inside a URL, a token in a request path, an error that quotes the URL).
 * Written forms shorter than `minLength` characters are left out with their encodings; empty
 * strings always.
 */
export function secretForms(value: string, minLength = 1): string[] {
  const forms = new Set<string>();
  const lines = value.split(/\r?\n|\r/).map((l) => l.trim());
  for (const form of [value, ...lines]) {
    if (form.length < Math.max(1, minLength)) continue;
    forms.add(form);
    for (const encoded of [encodeURIComponent(form), encodeURI(form)]) {
      forms.add(encoded);
      forms.add(encoded.replace(/%[0-9A-F]{2}/g, (m) => m.toLowerCase()));
    }
  }
  return [...forms];
}

/**
 * Adds secret values (tokens, keys) that must never appear in a log line, in every form of
 * {@link secretForms}. Values (and lines of a multi-line value) shorter than
 * {@link MIN_SECRET_LENGTH} characters are ignored here (an MCP server's own short values are
 * still redacted from its stderr and errors, see {@link valueRedactor}).
 */
export function registerSecrets(values: Iterable<string>): void {
  for (const v of values) for (const form of secretForms(v, MIN_SECRET_LENGTH)) secrets.add(form);
}

/**
 * A function that replaces each of `values` (any length, in every form of {@link secretForms})
 * in a text with `[redacted]`, longest first, then applies {@link redact}. For text that comes
 * from one source whose secrets are known (an MCP server's stderr and errors), including values
 * shorter than {@link MIN_SECRET_LENGTH}. The forms are worked out once, here.
 */
export function valueRedactor(values: readonly string[]): (text: string) => string {
  const forms = [...new Set(values.flatMap((v) => secretForms(v)))].sort((a, b) => b.length - a.length);
  return (text) => {
    let out = text;
    for (const s of forms) if (out.includes(s)) out = out.split(s).join("[redacted]");
    return redact(out);
  };
}

/** {@link valueRedactor}`(values)(text)`, for one text. */
export function redactValues(text: string, values: readonly string[]): string {
  return valueRedactor(values)(text);
}

/**
 * Shapes of credentials that are redacted even when they were never registered (a key a person
 * pastes into a chat, a token quoted in an error), each replaced by `[redacted]` (a Bearer token
 * keeps its scheme: `Bearer [redacted]`). Kept narrow: a prefix the issuer documents and a length
 * ordinary words do not reach.
 *
 * - Telegram bot token: `<6–12 digits>:<30+ of A-Za-z0-9_->`, also with the colon URL-encoded (`%3A`);
 * - Discord bot token: three dot-separated base64url parts, the first starting with `M` or `N`;
 * - Anthropic API key `sk-ant-…`, OpenAI-style keys `sk-…`/`sk-proj-…` (20+ characters after `sk-`);
 * - GitHub tokens (`ghp_`, `gho_`, `ghu_`, `ghs_`, `ghr_`, `github_pat_`), Slack tokens (`xoxb-`, `xoxp-`, …),
 *   Google API keys (`AIza` + 35), AWS access key ids (`AKIA`/`ASIA` + 16 upper-case letters or digits);
 * - JSON Web Tokens (`eyJ….eyJ….…`);
 * - the credentials of an `Authorization: Bearer <token>` (or `Basic`) header or a `Bearer <token>` of 16+ characters;
 * - the value of a credential written as a setting: `password`, `passwd`, `pwd`, `secret`, `token`,
 *   `api_key`/`api-key`/`apikey` (also as the end of a longer name: `db_password`, `access_token`) or
 *   `密碼`, then right after `=` any value (`password=hunter2`, `?token=abc&…`); after `:`, `：` or a
 *   spaced `=`, a value of 6+ characters with a digit or a symbol (`password: hunter2`,
 *   `PASSWORD = 'hunter2'`), so prose and code stay (`token: expired`, `token = getToken()`).
 *   The name stays (`password=[redacted]`), so the text still says what was there.
 */
export const SECRET_SHAPES: readonly {
  name: string;
  pattern: RegExp;
  replacement: string;
  /**
   * Texts one of which every match contains (in lower case when `caseless`): a text without any
   * of them is not searched with `pattern` ({@link redact} runs on every log line and trace field).
   */
  hints: readonly string[];
  /** True when the hints are looked for in the text in lower case (the pattern ignores case). */
  caseless?: boolean;
}[] = [
  {
    name: "telegram",
    pattern: /(?<!\d)\d{6,12}(?::|%3a)[A-Za-z0-9_-]{30,}/gi,
    replacement: "[redacted]",
    hints: [":", "%3a", "%3A"],
  },
  {
    name: "discord",
    pattern: /\b[MN][A-Za-z0-9_-]{23,25}\.[A-Za-z0-9_-]{6}\.[A-Za-z0-9_-]{27,}\b/g,
    replacement: "[redacted]",
    hints: ["."],
  },
  {
    name: "anthropic",
    pattern: /(?<![A-Za-z0-9_-])sk-ant-[A-Za-z0-9_-]{8,}/g,
    replacement: "[redacted]",
    hints: ["sk-ant-"],
  },
  {
    name: "openai",
    pattern: /(?<![A-Za-z0-9_-])sk-(?:proj-)?[A-Za-z0-9_-]{20,}/g,
    replacement: "[redacted]",
    hints: ["sk-"],
  },
  {
    name: "github",
    pattern: /\b(?:gh[pousr]_[A-Za-z0-9]{30,}|github_pat_[A-Za-z0-9_]{40,})/g,
    replacement: "[redacted]",
    hints: ["gh", "github_pat_"],
  },
  { name: "slack", pattern: /\bxox[abprs]-[A-Za-z0-9-]{10,}/g, replacement: "[redacted]", hints: ["xox"] },
  { name: "google", pattern: /\bAIza[A-Za-z0-9_-]{35}/g, replacement: "[redacted]", hints: ["AIza"] },
  { name: "aws", pattern: /\b(?:AKIA|ASIA)[A-Z0-9]{16}\b/g, replacement: "[redacted]", hints: ["AKIA", "ASIA"] },
  {
    name: "jwt",
    pattern: /\beyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}/g,
    replacement: "[redacted]",
    hints: ["eyJ"],
  },
  {
    name: "authorization",
    pattern: /\b(authorization\s*[:=]\s*["']?(?:bearer|basic|bot)\s+)[^\s"',;]+/gi,
    replacement: "$1[redacted]",
    hints: ["authorization"],
    caseless: true,
  },
  {
    name: "bearer",
    pattern: /\b(bearer\s+)[A-Za-z0-9._~+/=-]{16,}/gi,
    replacement: "$1[redacted]",
    hints: ["bearer"],
    caseless: true,
  },
  {
    name: "setting",
    pattern: /(?<![A-Za-z0-9])((?:passw(?:or)?d|pwd|secret|token|api[_-]?key|密碼)=["']?)[^\s"'&,;()<>[\]{}]+/gi,
    replacement: "$1[redacted]",
    hints: ["="],
  },
  {
    name: "setting-spaced",
    pattern:
      /(?<![A-Za-z0-9])((?:passw(?:or)?d|pwd|secret|token|api[_-]?key|密碼)\s*[=:：]\s*["']?)(?=[^\s"'&,;()<>[\]{}]*[0-9!@#$%^*+/~=])[^\s"'&,;()<>[\]{}]{6,}/gi,
    replacement: "$1[redacted]",
    hints: ["=", ":", "："],
  },
];

/** Whether `text` contains one of `parts`. */
function holdsAny(text: string, parts: readonly string[]): boolean {
  for (const part of parts) if (text.includes(part)) return true;
  return false;
}

/**
 * Replaces every registered secret in `text` (as written or URL-encoded) with `[redacted]`, and
 * every {@link SECRET_SHAPES} match (bot tokens, API keys, Bearer tokens) even when it was never
 * registered, and the userinfo of a URL (`https://user:pass@host` → `https://[redacted]@host`).
 * Use it on any text that leaves the process: logs, traces (the trace store and OpenTelemetry
 * spans with `OTEL_CAPTURE_CONTENT=on`), error messages shown to users, tool results.
 */
export function redact(text: string): string {
  let out = text;
  for (const s of secrets) if (out.includes(s)) out = out.split(s).join("[redacted]");
  // Credentials written into a URL (`https://user:password@host/`).
  if (out.includes("://")) out = out.replace(/\b([a-z][a-z0-9+.-]*:\/\/)[^\s/@]+@/gi, "$1[redacted]@");
  // Only the shapes whose hints the text holds are searched for (most texts hold none).
  let lower: string | undefined;
  for (const { pattern, replacement, hints, caseless } of SECRET_SHAPES) {
    const haystack = caseless ? (lower ??= out.toLowerCase()) : out;
    if (!holdsAny(haystack, hints)) continue;
    const replaced = out.replace(pattern, replacement);
    if (replaced !== out) lower = undefined;
    out = replaced;
  }
  return out;
}

/** Paths redacted in every log object (pino `redact`). */
export const REDACT_PATHS = [
  "token",
  "apiKey",
  "api_key",
  "authorization",
  "Authorization",
  "*.token",
  "*.apiKey",
  "*.api_key",
  "*.authorization",
  "*.Authorization",
  "headers.authorization",
  "*.headers.authorization",
  "*.headers['x-api-key']",
  "config.ANTHROPIC_API_KEY",
  "config.TELEGRAM_BOT_TOKEN",
  "config.DISCORD_TOKEN",
  "config.CWA_API_KEY",
  "config.STT_API_KEY",
  "config.TELEGRAM_WEBHOOK_SECRET",
];

/** The key of a log object under which message content goes; see the module comment. */
export const CONTENT_KEY = "content";

/** What a log line shows instead of message content when `LOG_CONTENT` is off. */
export const CONTENT_HIDDEN = "[content not logged: LOG_CONTENT=off]";

/** Most nested causes an error is logged with. */
const MAX_CAUSES = 5;

/**
 * An error as a log line shows it when content is not logged: its type, message, stack and the own
 * fields that are plain values (`code`, `status`, `method`, `description`…), and its cause the same
 * way; fields holding objects (a request's payload or body, with the text that was sent) are left
 * out. Anything that is not an error is shown as it is.
 */
export function errorWithoutContent(value: unknown, depth = 0): unknown {
  if (!(value instanceof Error)) return value;
  const out: Record<string, unknown> = { type: value.constructor?.name ?? value.name, message: value.message };
  if (value.stack) out.stack = value.stack;
  for (const [field, v] of Object.entries(value)) {
    if (field === "cause" || field === "message" || field === "stack") continue;
    if (v === null || ["string", "number", "boolean", "bigint"].includes(typeof v)) out[field] = v;
  }
  if (value.cause !== undefined && depth < MAX_CAUSES) out.cause = errorWithoutContent(value.cause, depth + 1);
  return out;
}

/** Options for {@link createLogger}. */
export interface CreateLoggerOptions {
  /** pino level name; default `info`. */
  level?: string;
  /** Force pretty (true) or JSON (false) output; default: pretty when stdout is a TTY. */
  pretty?: boolean;
  /** Where JSON lines go (tests pass a stream to read them); default stdout. */
  destination?: NodeJS.WritableStream;
  /**
   * Whether message content may be logged (`LOG_CONTENT=on`): the {@link CONTENT_KEY} fields as
   * they are, and errors with every field. Default false.
   */
  content?: boolean;
}

/**
 * Creates the root logger. Child loggers (`logger.child({ chat })`) inherit redaction.
 * Never throws.
 */
export function createLogger(options: CreateLoggerOptions = {}): Logger {
  const pretty = options.pretty ?? (process.stdout.isTTY === true && !options.destination);
  const content = options.content === true;
  const base: LoggerOptions = {
    level: options.level ?? "info",
    redact: {
      paths: content ? REDACT_PATHS : [...REDACT_PATHS, CONTENT_KEY, `*.${CONTENT_KEY}`],
      censor: (_value: unknown, path: string[]) => (path.at(-1) === CONTENT_KEY ? CONTENT_HIDDEN : "[redacted]"),
    },
    ...(content
      ? {}
      : {
          serializers: {
            err: (error: unknown) => errorWithoutContent(error),
            error: (e: unknown) => errorWithoutContent(e),
          },
        }),
    hooks: { streamWrite: (line: string) => redact(line) },
    base: { pid: process.pid },
  };
  if (pretty) {
    return pino({
      ...base,
      transport: {
        target: "pino-pretty",
        options: { colorize: true, translateTime: "SYS:HH:MM:ss.l", ignore: "pid,hostname" },
      },
    });
  }
  const stream = (options.destination ?? process.stdout) as NodeJS.WritableStream & { write(s: string): boolean };
  return pino(base, stream);
}

/**
 * Keeps the process going when its standard output or error has lost its reader (`EPIPE`: the
 * `tee` or pager it was piped into has ended — `npm start | tee bot.log` and the terminal's Ctrl-C
 * ends `tee` too). Without it, the next log line's write error is uncaught and ends the process at
 * once, so a stop could not finish its work (marking the answers it gives up on as interrupted,
 * closing connections) and was counted as a crash. With it, lines written to a stream without a
 * reader are dropped. Any other error of those streams is thrown as before. Call once at start-up;
 * never throws itself.
 */
export function surviveLostOutput(): void {
  for (const stream of [process.stdout, process.stderr]) {
    stream.on("error", (error: NodeJS.ErrnoException) => {
      if (error.code !== "EPIPE") throw error;
    });
  }
}

/** A logger that writes nothing, for tests and library callers that pass none. */
export const silentLogger: Logger = pino({ level: "silent" });
