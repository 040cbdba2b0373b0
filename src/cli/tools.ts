/**
 * `npm run tools` — prints the toolbox: every loaded tool (name, tags, dangerous or not, first line
 * of its description, and its title and summary for people when it declares them), the tools skipped at start-up with the reason, and the loaded tools no chat
 * offers to the model (their tags match none of `CHAT_TAGS`) with the reason. `--json` prints the same
 * as JSON; `--dir <folder>` (repeatable) loads other folders instead of `tools/`.
 * `--help` prints the usage. Exits 1 with the registry's error when loading fails (duplicate or
 * invalid tool), 2 on a bad option (with the usage) or a bad configuration. This is how a tool author checks a new file.
 *
 * With an MCP config (`MCP_CONFIG`, or `mcp.json` at the project root) it also connects to each
 * MCP server once, lists its tools (name, server, tags, whether they ask for approval) and the
 * servers skipped with the reason, then stops them. Secrets from `${VAR}` never appear: reasons
 * are redacted, and headers, env and URLs are not printed.
 */
import path from "node:path";
import { parseArgs } from "node:util";
import { type Locale } from "../config.js";
import { englishCount, englishNoun, localize, type Localized } from "../i18n.js";
import { createLogger, redact } from "../log.js";
import { mcpConfigPath, McpConfigError, readMcpConfig } from "../mcp/config.js";
import { McpToolSource, warnCrowdedContexts } from "../mcp/source.js";
import { loadTools, ToolRegistryError, type LoadedTools } from "../toolbox/registry.js";
import { unofferedReason, unofferedTools } from "../toolbox/select.js";
import { isEntryPoint, loadCliConfig, logDestination, runAsProgram, type CliIo } from "./io.js";

/** The listing as printed by `--json`. */
export interface ToolListing {
  /** `title` and `summary` (every locale) only when the tool declares them. */
  tools: {
    name: string;
    tags: string[];
    dangerous: boolean;
    description: string;
    file: string;
    title?: Localized;
    summary?: Localized;
  }[];
  skipped: { name: string; file: string; reason: string }[];
  /** Loaded tools (also in `tools`) that no chat offers to the model, with the reason. */
  notOffered: { name: string; file: string; reason: string }[];
  /** MCP servers, when there is an MCP config. */
  mcp?: McpListing;
}

/** The MCP part of the listing. */
export interface McpListing {
  /** The MCP config file read (relative to the current folder when inside it). */
  file: string;
  /**
   * Tools of the connected servers: toolbox name, server, MCP name, tags, whether a call asks the
   * user first and why (the `safe` list, trusted annotations, a need kept after `list_changed`).
   */
  tools: {
    name: string;
    server: string;
    tool: string;
    tags: string[];
    approval: boolean;
    why: string;
    description: string;
  }[];
  /** Servers that could not be used, with the reason (redacted). */
  skipped: { server: string; reason: string }[];
  /** Tools of connected servers left out, with the reason. */
  skippedTools: { server: string; tool: string; reason: string }[];
  /**
   * The start-up warnings: names in the config that match no tool, the limits (tools per server,
   * descriptions cut), tools that kept a stricter need, and chats offered more than 10 tools.
   */
  warnings: string[];
}

/** The MCP part of the listing, from a started source. */
export function mcpListing(file: string, source: McpToolSource, warnings: string[]): McpListing {
  return {
    file: path.relative(process.cwd(), file).startsWith("..") ? file : path.relative(process.cwd(), file),
    tools: source.tools().flatMap(({ server, tools }) =>
      tools.map((t) => ({
        name: t.name,
        server,
        tool: t.mcp.tool,
        tags: [...t.tags],
        approval: t.dangerous,
        why: t.mcp.why,
        description: t.description.trim().split("\n")[0]!.trim(),
      })),
    ),
    skipped: source.skipped.map((s) => ({ server: s.server, reason: redact(s.reason) })),
    skippedTools: source.skippedTools.map((s) => ({ ...s, reason: redact(s.reason) })),
    warnings: [...source.warnings, ...warnings].map(redact),
  };
}

/** Builds the listing of a loaded toolbox (first line of each description); MCP tools go under `mcp`. */
export function toolListing(loaded: LoadedTools, mcp?: McpListing): ToolListing {
  const mcpNames = new Set(mcp?.tools.map((t) => t.name));
  return {
    ...(mcp ? { mcp } : {}),
    tools: loaded.toolbox
      .list()
      .filter((t) => !mcpNames.has(t.name))
      .map((t) => ({
        name: t.name,
        tags: [...t.tags],
        dangerous: t.dangerous,
        description: t.description.trim().split("\n")[0]!.trim(),
        file: path.relative(process.cwd(), t.file) || t.file,
        ...(t.title ? { title: { ...t.title } } : {}),
        ...(t.summary ? { summary: { ...t.summary } } : {}),
      })),
    skipped: loaded.skipped,
    notOffered: unofferedTools(loaded.toolbox).map((t) => ({
      name: t.name,
      file: t.source ?? (path.relative(process.cwd(), t.file) || t.file),
      reason: unofferedReason(t),
    })),
  };
}

/**
 * Formats the listing as aligned text for a terminal; a tool's title and summary for people are
 * shown in `locale` (the bot's `BOT_LOCALE`).
 */
export function formatListing(listing: ToolListing, locale: Locale = "zh-TW"): string {
  const lines: string[] = [];
  const width = Math.max(4, ...listing.tools.map((t) => t.name.length));
  lines.push(`${englishCount(listing.tools.length, "tool")} loaded:`);
  for (const t of listing.tools) {
    const flag = t.dangerous ? " ⚠️ dangerous (asks the user first)" : "";
    lines.push(`  ${t.name.padEnd(width)}  [${t.tags.join(", ")}]${flag}`);
    lines.push(`  ${"".padEnd(width)}  ${t.description}`);
    const people = [t.title, t.summary].filter((x) => x !== undefined).map((x) => localize(locale, x));
    if (people.length > 0) lines.push(`  ${"".padEnd(width)}  for people: ${people.join(" — ")}`);
  }
  if (listing.skipped.length > 0) {
    lines.push("", `${listing.skipped.length} skipped:`);
    for (const s of listing.skipped) lines.push(`  ${s.name.padEnd(width)}  ${s.reason} (${s.file})`);
  }
  if (listing.notOffered.length > 0) {
    lines.push("", `${listing.notOffered.length} loaded but never offered to the model:`);
    for (const t of listing.notOffered) lines.push(`  ${t.name.padEnd(width)}  ${t.reason} (${t.file})`);
  }
  if (listing.mcp) lines.push("", ...formatMcp(listing.mcp));
  return lines.join("\n");
}

function formatMcp(mcp: McpListing): string[] {
  const lines = [`${mcp.tools.length} MCP ${englishNoun(mcp.tools.length, "tool")} (from ${mcp.file}):`];
  const width = Math.max(4, ...mcp.tools.map((t) => t.name.length));
  for (const t of mcp.tools) {
    lines.push(
      `  ${t.name.padEnd(width)}  server ${t.server}  [${t.tags.join(", ")}]  ${t.approval ? "⚠️ asks for approval" : "no approval"} (${t.why})`,
    );
    lines.push(`  ${"".padEnd(width)}  ${t.description}`);
  }
  if (mcp.skipped.length > 0) {
    lines.push("", `${mcp.skipped.length} MCP ${englishNoun(mcp.skipped.length, "server")} skipped:`);
    for (const s of mcp.skipped) lines.push(`  ${s.server}: ${s.reason}`);
  }
  if (mcp.skippedTools.length > 0) {
    lines.push("", `${mcp.skippedTools.length} MCP ${englishNoun(mcp.skippedTools.length, "tool")} skipped:`);
    for (const s of mcp.skippedTools) lines.push(`  ${s.server}/${s.tool}: ${s.reason}`);
  }
  for (const w of mcp.warnings) lines.push("", `warning: ${w}`);
  return lines;
}

const USAGE = `usage: npm run tools [-- [--json] [--dir <folder>]...]
  --json          print the listing as JSON (use npm run -s tools -- --json for JSON alone on stdout)
  --dir <folder>  load the tools of this folder instead of tools/ (repeatable)
  --help          print this help`;

/** The options, or the exit code: 0 after `--help`, 2 after a bad option (usage on stderr). */
function options(argv: string[], io: CliIo): { json: boolean; dir?: string[] } | number {
  try {
    const { values } = parseArgs({
      args: argv,
      options: {
        json: { type: "boolean", default: false },
        dir: { type: "string", multiple: true },
        help: { type: "boolean", short: "h", default: false },
      },
    });
    if (values.help) {
      io.out(USAGE);
      return 0;
    }
    return { json: values.json, dir: values.dir };
  } catch (error) {
    // parseArgs: unknown option, missing value, unexpected argument.
    io.err(`${(error as Error).message}\n${USAGE}`);
    return 2;
  }
}

/**
 * `npm run tools -- …argv` with the environment `env` (`.env` already read into it by the entry
 * point), writing to `io` (log lines of loading, e.g. a skipped tool's warning, to `io.out`).
 * @returns the exit code (0, 1 or 2, see above).
 * @throws what loading throws besides the registry's and the MCP config's errors.
 */
export async function toolsMain(argv: string[], env: NodeJS.ProcessEnv, io: CliIo): Promise<number> {
  const values = options(argv, io);
  if (typeof values === "number") return values;
  const config = loadCliConfig(env, io);
  if (!config) return 2;
  const destination = logDestination(io);
  const log = createLogger({ level: "error", ...(destination ? { destination } : {}) });
  let source: McpToolSource | undefined;
  try {
    const loaded = await loadTools({ config, log, dirs: values.dir });
    const file = mcpConfigPath(config.MCP_CONFIG);
    let mcp: McpListing | undefined;
    if (file) {
      source = new McpToolSource({ config: readMcpConfig(file, env), toolbox: loaded.toolbox, log });
      await source.start();
      mcp = mcpListing(file, source, warnCrowdedContexts(loaded.toolbox, source, log));
    }
    const listing = toolListing(loaded, mcp);
    io.out(values.json ? JSON.stringify(listing, null, 2) : formatListing(listing, config.BOT_LOCALE));
    return 0;
  } catch (error) {
    if (error instanceof ToolRegistryError || error instanceof McpConfigError) {
      io.err(redact(error.message));
      return 1;
    }
    throw error;
  } finally {
    await source?.close();
  }
}

if (isEntryPoint(import.meta.url)) await runAsProgram("tools", toolsMain);
