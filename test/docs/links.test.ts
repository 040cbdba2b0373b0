/**
 * The documentation's links stay valid: every relative link of README.md and of the pages under
 * docs/ names a file of the repository, and a link with `#anchor` into a Markdown page names one
 * of that page's headings (GitHub's anchors: the heading in lower case, punctuation dropped,
 * spaces as hyphens). Pages move and headings change; a reader must not land on nothing.
 */
import { existsSync, readdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { ROOT } from "../helpers/compiled.js";

/** README.md and every Markdown page under docs/, as paths relative to the repository. */
function pages(): string[] {
  const docs = path.join(ROOT, "docs");
  const found = ["README.md"];
  if (existsSync(docs))
    for (const entry of readdirSync(docs, { recursive: true, encoding: "utf8" }))
      if (entry.endsWith(".md")) found.push(path.join("docs", entry));
  return found;
}

/** The anchor GitHub gives a heading: lower case, punctuation other than `-` and `_` dropped, spaces as `-`. */
function anchorOf(heading: string): string {
  return heading
    .trim()
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s_-]/gu, "")
    .replace(/\s/g, "-");
}

/** The anchors of a Markdown text's headings (outside code blocks). */
function anchors(text: string): Set<string> {
  const found = new Set<string>();
  let fenced = false;
  for (const line of text.split("\n")) {
    if (line.startsWith("```")) fenced = !fenced;
    const heading = !fenced && /^#{1,6}\s+(.+)$/.exec(line);
    if (heading) found.add(anchorOf(heading[1]!));
  }
  return found;
}

/** The relative link targets of a Markdown text (outside code blocks and code spans). */
function links(text: string): string[] {
  const found: string[] = [];
  let fenced = false;
  for (const line of text.split("\n")) {
    if (line.startsWith("```")) fenced = !fenced;
    if (fenced) continue;
    const prose = line.replace(/`[^`]*`/g, "");
    for (const [, target] of prose.matchAll(/\]\(([^)\s]+)\)/g))
      if (!/^[a-z][a-z0-9+.-]*:/i.test(target!)) found.push(target!);
  }
  return found;
}

describe("documentation links", () => {
  it("computes GitHub's anchors", () => {
    expect(anchorOf("What `/health` means")).toBe("what-health-means");
    expect(anchorOf("Redis must keep its data (append-only file)")).toBe("redis-must-keep-its-data-append-only-file");
  });

  it.each(pages())("%s links only to files and headings that exist", (page) => {
    const text = readFileSync(path.join(ROOT, page), "utf8");
    const broken: string[] = [];
    for (const target of links(text)) {
      const [file, anchor] = target.split("#") as [string, string | undefined];
      const resolved = file === "" ? path.join(ROOT, page) : path.resolve(ROOT, path.dirname(page), file);
      if (!existsSync(resolved)) {
        broken.push(`${target} (no such file)`);
        continue;
      }
      if (anchor && resolved.endsWith(".md") && !anchors(readFileSync(resolved, "utf8")).has(anchor))
        broken.push(`${target} (no such heading)`);
    }
    expect(broken).toEqual([]);
  });

  it("README.md is a front door of at most 200 lines", () => {
    const lines = readFileSync(path.join(ROOT, "README.md"), "utf8").trimEnd().split("\n");
    expect(lines.length).toBeLessThanOrEqual(200);
  });
});
