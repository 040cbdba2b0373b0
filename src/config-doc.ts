/**
 * `docs/configuration.md`, generated from the configuration schema (`ConfigSchema` in
 * `src/config.ts`): one table row per variable, with the schema's own description (`.describe()`)
 * and its default (what the schema gives for an unset variable). `npm run docs:config` writes the
 * page; `test/docs/configuration.test.ts` fails when the page differs from what this renders, or
 * when a variable has no description, so the page cannot drift from the schema.
 */
import { ConfigSchema, SECRET_VARIABLES } from "./config.js";

/** Where the page lives, relative to the repository root. */
export const CONFIGURATION_DOC = "docs/configuration.md";

/**
 * The sections of the page, each named by the variable it starts with; every later variable of
 * the schema belongs to the section above it, so a new variable needs no entry here.
 */
const SECTIONS: Record<string, string> = {
  ANTHROPIC_API_KEY: "Anthropic Messages API",
  TELEGRAM_BOT_TOKEN: "Telegram",
  DISCORD_TOKEN: "Discord",
  LINE_CHANNEL_SECRET: "LINE",
  REDIS_URL: "Redis",
  CWA_API_KEY: "Weather, place, time and language",
  MAX_TURNS: "Answers: tools, web search, memory, streaming, deadlines",
  CONFIRM_TIMEOUT_SECONDS: "Approvals, reminders, tasks, MCP",
  WORKER_CONCURRENCY: "Processes",
  STT_BASE_URL: "Voice, pictures and files",
  HISTORY_MAX_MESSAGES: "History and compaction",
  ACCESS_POLICY: "Access, limits and budgets",
  HTTP_PORT: "Health, metrics, console and logs",
};

const INTRO = [
  "# Configuration",
  "",
  "<!-- Generated from the schema in src/config.ts by `npm run docs:config`: edit the `.describe()` " +
    "texts there, not this page (a test compares them). -->",
  "",
  "Everything comes from the environment (`.env` is read at start-up) and is validated at once: every " +
    "problem is listed in one message, and no value is ever printed. A blank value means the default. " +
    "`.env.example` has only what a first run needs; this page has every variable, generated from the " +
    "schema in `src/config.ts` (`npm run docs:config`).",
  "",
  "A name that is not in these tables but close to one (`STREAMNG`, `ANTHROPIC_MODLE`, `CWA_APIKEY`, " +
    "`TELEGRAM_TOKEN`) would be ignored, so start-up (`npm start`, `npm run chat`) warns once per such " +
    "name — every name in `.env`, and in the environment those that start like ours (`ANTHROPIC_`, " +
    "`TELEGRAM_`, `DISCORD_`, `REDIS_`, `CWA_`, …) — naming the variable it probably meant, never the " +
    "value.",
  "",
  "Secrets (marked 🔒) are never printed, and are redacted from logs, traces and chats.",
];

/** A value as a table cell: code, or `unset` when the schema gives nothing. */
function defaultCell(value: unknown): string {
  if (value === undefined || value === "" || (Array.isArray(value) && value.length === 0)) return "unset";
  return `\`${String(value)}\``;
}

/** Text safe inside a Markdown table cell (a `|` would end the cell; a line break the row). */
function cell(text: string): string {
  return text.replace(/\|/g, "\\|").replace(/\s*\n\s*/g, " ");
}

/**
 * Renders the configuration page from {@link ConfigSchema}.
 * @returns the page's Markdown, ending in one newline.
 * @throws Error naming every variable of the schema that has no `.describe()` text.
 */
export function renderConfigurationDoc(): string {
  const secrets = new Set<string>(SECRET_VARIABLES);
  const undocumented: string[] = [];
  const lines = [...INTRO];
  for (const [name, schema] of Object.entries(ConfigSchema.shape)) {
    const section = SECTIONS[name];
    if (section || lines.length === INTRO.length)
      lines.push("", `## ${section ?? "Variables"}`, "", "| variable | meaning | default |", "|---|---|---|");
    const description = schema.description?.trim();
    if (!description) undocumented.push(name);
    const parsed = schema.safeParse(undefined);
    const fallback = parsed.success ? defaultCell(parsed.data) : "unset";
    lines.push(`| \`${name}\`${secrets.has(name) ? " 🔒" : ""} | ${cell(description ?? "")} | ${fallback} |`);
  }
  if (undocumented.length > 0)
    throw new Error(
      `These variables of ConfigSchema (src/config.ts) have no .describe() text for ${CONFIGURATION_DOC}: ${undocumented.join(", ")}`,
    );
  return `${lines.join("\n")}\n`;
}
