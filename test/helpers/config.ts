/**
 * Configuration for tests: the real schema over a small environment, no secrets required.
 */
import { loadConfig, type Config } from "../../src/config.js";

/** A valid configuration with test defaults, overridden by `env`. */
export function testConfig(env: Record<string, string | undefined> = {}): Config {
  return loadConfig({ LOG_LEVEL: "silent", ...env }, { purpose: "inspect" });
}
