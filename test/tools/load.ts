/**
 * Loads the real shipped tools the way start-up does (`loadTools` over the `tools/` folder).
 */
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { Config } from "../../src/config.js";
import { loadTools, type LoadedTools } from "../../src/toolbox/registry.js";
import { testConfig } from "../helpers/config.js";

/** The repository root. */
export const REPO_ROOT = fileURLToPath(new URL("../../", import.meta.url));
/** The shipped tools folder. */
export const TOOLS_DIR = path.join(REPO_ROOT, "tools");

/**
 * The tools this repository ships. A contributor's new tool (README, "Adding a tool") sits beside
 * them, so tests check these by name and never the exact count or set of loaded tools.
 */
export const SHIPPED_TOOLS = [
  "add_todo",
  "calculate",
  "cancel_reminder",
  "complete_todo",
  "delete_todo",
  "get_current_datetime",
  "get_weather",
  "list_reminders",
  "list_todos",
  "set_reminder",
];

/** Loads every tool under `tools/` with `config` (default: test config without a CWA key). */
export function loadShippedTools(config: Config = testConfig()): Promise<LoadedTools> {
  return loadTools({ config, dirs: [TOOLS_DIR] });
}
