/**
 * docs/configuration.md is generated from the configuration schema (`npm run docs:config`) and
 * cannot drift from it: the page in the repository must be exactly what the schema renders, every
 * variable has a description, and the defaults shown are the ones `loadConfig` applies.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { CONFIGURATION_DOC, renderConfigurationDoc } from "../../src/config-doc.js";
import { ConfigSchema, loadConfig } from "../../src/config.js";
import { ROOT } from "../helpers/compiled.js";

describe("docs/configuration.md", () => {
  const page = renderConfigurationDoc();

  it("is what the schema renders (after a change to src/config.ts, run npm run docs:config)", () => {
    expect(readFileSync(path.join(ROOT, CONFIGURATION_DOC), "utf8")).toBe(page);
  });

  it("has one row per variable of the schema, each with a description", () => {
    const rows = [...page.matchAll(/^\| `([A-Z0-9_]+)`(?: 🔒)? \| (.+?) \| (.+) \|$/gm)];
    expect(rows.map((r) => r[1])).toEqual(Object.keys(ConfigSchema.shape));
    for (const row of rows) expect(row[2]!.length, row[1]).toBeGreaterThan(20);
  });

  it("shows the defaults loadConfig applies", () => {
    const config = loadConfig({}, { purpose: "inspect" });
    const row = (name: string) => new RegExp(`^\\| \`${name}\` \\| .+ \\| (.+) \\|$`, "m").exec(page)?.[1];
    expect(row("MAX_TURNS")).toBe(`\`${config.MAX_TURNS}\``);
    expect(row("ANTHROPIC_MODEL")).toBe("`claude-opus-5`");
    expect(row("USER_DAILY_TOKENS")).toBe("`330000`");
    expect(row("LOG_CONTENT")).toBe("`off`");
    expect(row("ALWAYS_ALLOW_DAYS")).toBe("`30`");
    expect(row("REDIS_URL")).toBe("unset");
    expect(row("BOT_LOCALE")).toBe(`\`${config.BOT_LOCALE}\``);
  });

  it("marks the secrets", () => {
    expect(page).toMatch(/^\| `ANTHROPIC_API_KEY` 🔒 \|/m);
    expect(page).toMatch(/^\| `STT_API_KEY` 🔒 \|/m);
  });
});
