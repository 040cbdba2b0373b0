/**
 * `npm run tools` — prints the toolbox: every loaded tool (name, tags, dangerous or not, first line
 * of its description), the tools skipped at start-up with the reason, and the loaded tools no chat
 * offers to the model (their tags match none of `CHAT_TAGS`) with the reason. `--json` prints the same
 * as JSON; `--dir <folder>` (repeatable) loads other folders instead of `tools/`.
 * `--help` prints the usage. Exits 1 with the registry's error when loading fails (duplicate or
 * invalid tool), 2 on a bad option (with the usage) or a bad configuration. This is how a tool author checks a new file.
 */
import "dotenv/config";
import path from "node:path";
import { parseArgs } from "node:util";
import { ConfigError, loadConfig, secretValues } from "../config.js";
import { createLogger, registerSecrets } from "../log.js";
import { loadTools, ToolRegistryError, type LoadedTools } from "../toolbox/registry.js";
import { unofferedReason, unofferedTools } from "../toolbox/select.js";

/** The listing as printed by `--json`. */
export interface ToolListing {
  tools: { name: string; tags: string[]; dangerous: boolean; description: string; file: string }[];
  skipped: { name: string; file: string; reason: string }[];
  /** Loaded tools (also in `tools`) that no chat offers to the model, with the reason. */
  notOffered: { name: string; file: string; reason: string }[];
}

/** Builds the listing of a loaded toolbox (first line of each description). */
export function toolListing(loaded: LoadedTools): ToolListing {
  return {
    tools: loaded.toolbox.list().map((t) => ({
      name: t.name,
      tags: [...t.tags],
      dangerous: t.dangerous,
      description: t.description.trim().split("\n")[0]!.trim(),
      file: path.relative(process.cwd(), t.file) || t.file,
    })),
    skipped: loaded.skipped,
    notOffered: unofferedTools(loaded.toolbox).map((t) => ({
      name: t.name,
      file: path.relative(process.cwd(), t.file) || t.file,
      reason: unofferedReason(t),
    })),
  };
}

/** Formats the listing as aligned text for a terminal. */
export function formatListing(listing: ToolListing): string {
  const lines: string[] = [];
  const width = Math.max(4, ...listing.tools.map((t) => t.name.length));
  lines.push(`${listing.tools.length} tool${listing.tools.length === 1 ? "" : "s"} loaded:`);
  for (const t of listing.tools) {
    const flag = t.dangerous ? " ⚠️ dangerous (asks the user first)" : "";
    lines.push(`  ${t.name.padEnd(width)}  [${t.tags.join(", ")}]${flag}`);
    lines.push(`  ${"".padEnd(width)}  ${t.description}`);
  }
  if (listing.skipped.length > 0) {
    lines.push("", `${listing.skipped.length} skipped:`);
    for (const s of listing.skipped) lines.push(`  ${s.name.padEnd(width)}  ${s.reason} (${s.file})`);
  }
  if (listing.notOffered.length > 0) {
    lines.push("", `${listing.notOffered.length} loaded but never offered to the model:`);
    for (const t of listing.notOffered) lines.push(`  ${t.name.padEnd(width)}  ${t.reason} (${t.file})`);
  }
  return lines.join("\n");
}

const USAGE = `usage: npm run tools [-- [--json] [--dir <folder>]...]
  --json          print the listing as JSON (use npm run -s tools -- --json for JSON alone on stdout)
  --dir <folder>  load the tools of this folder instead of tools/ (repeatable)
  --help          print this help`;

/** The options, or the exit code: 0 after `--help`, 2 after a bad option (usage on stderr). */
function options(argv: string[]): { json: boolean; dir?: string[] } | number {
  try {
    const { values } = parseArgs({
      args: argv,
      options: { json: { type: "boolean", default: false }, dir: { type: "string", multiple: true }, help: { type: "boolean", short: "h", default: false } },
    });
    if (values.help) {
      console.log(USAGE);
      return 0;
    }
    return { json: values.json, dir: values.dir };
  } catch (error) {
    // parseArgs: unknown option, missing value, unexpected argument.
    console.error(`${(error as Error).message}\n${USAGE}`);
    return 2;
  }
}

async function main(): Promise<number> {
  const values = options(process.argv.slice(2));
  if (typeof values === "number") return values;
  let config;
  try {
    config = loadConfig(process.env, { purpose: "inspect" });
  } catch (error) {
    if (error instanceof ConfigError) {
      console.error(error.message);
      return 2;
    }
    throw error;
  }
  registerSecrets(secretValues(config));
  const log = createLogger({ level: "error" });
  try {
    const loaded = await loadTools({ config, log, dirs: values.dir });
    const listing = toolListing(loaded);
    console.log(values.json ? JSON.stringify(listing, null, 2) : formatListing(listing));
    return 0;
  } catch (error) {
    if (error instanceof ToolRegistryError) {
      console.error(error.message);
      return 1;
    }
    throw error;
  }
}

process.exitCode = await main();
