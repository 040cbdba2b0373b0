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

/** Loads every tool under `tools/` with `config` (default: test config without a CWA key). */
export function loadShippedTools(config: Config = testConfig()): Promise<LoadedTools> {
  return loadTools({ config, dirs: [TOOLS_DIR] });
}
