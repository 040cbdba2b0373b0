/**
 * Issue 37 item 5: the formatter (prettier, a width of 120, run by `npm run lint`) keeps code near
 * 120 characters, but it never breaks a string; no line of the repository's code is longer than
 * 160 characters (UTF-16 units), test fixtures excepted.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join, relative } from "node:path";
import { describe, expect, it } from "vitest";
import { ROOT } from "../helpers/compiled.js";

/** The code files under `dir` (`.ts`, `.js`, `.mjs`), without `node_modules` and test fixtures. */
function codeFiles(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && /\.(ts|js|mjs)$/.test(e.name))
    .map((e) => relative(ROOT, join(e.parentPath, e.name)))
    .filter((f) => !f.includes("node_modules") && !f.startsWith("test/fixtures/"));
}

describe("line width (issue 37 item 5)", () => {
  it("no line of code is longer than 160 characters outside the fixtures", () => {
    const long: string[] = [];
    for (const file of ["src", "adapters", "tools", "scripts", "test"].flatMap(codeFiles))
      readFileSync(join(ROOT, file), "utf8")
        .split("\n")
        .forEach((line, i) => {
          if (line.length > 160) long.push(`${file}:${i + 1} (${line.length})`);
        });
    expect(long).toEqual([]);
  });

  it("prettier runs in npm run lint with a width of 120", () => {
    const pkg = JSON.parse(readFileSync(join(ROOT, "package.json"), "utf8")) as { scripts: Record<string, string> };
    expect(pkg.scripts.lint).toMatch(/prettier --check/);
    const config = readFileSync(join(ROOT, ".prettierrc.json"), "utf8");
    expect(JSON.parse(config)).toMatchObject({ printWidth: 120 });
  });
});
