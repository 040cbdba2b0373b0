/**
 * Issue 37 item 3: no import cycle — type-only imports count too — between `src/outbound.ts` and
 * `src/streaming.ts`, inside `src/worker/` (pipeline ↔ worker) or inside `adapters/telegram/`
 * (live ↔ outbound). The modules' relative imports and re-exports are read from the source
 * (`import …`, `import type …`, `export … from`), and the strongly connected groups found (Tarjan).
 */
import { readdirSync, readFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = resolve(import.meta.dirname, "../..");

/** Every .ts file under `dir` (relative to the repository). */
function sources(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true, recursive: true })
    .filter((e) => e.isFile() && e.name.endsWith(".ts"))
    .map((e) => relative(ROOT, join(e.parentPath, e.name)));
}

/** The repository files `file` imports or re-exports from (relative specifiers only). */
function importsOf(file: string): string[] {
  const text = readFileSync(join(ROOT, file), "utf8");
  const found: string[] = [];
  for (const m of text.matchAll(/^\s*(?:import|export)\b[^;]*?\bfrom\s+"(\.[^"]+)"/gms)) {
    found.push(relative(ROOT, resolve(ROOT, dirname(file), m[1]!.replace(/\.js$/, ".ts"))));
  }
  return found;
}

/** The groups of files that import each other, directly or around a loop (two files or more). */
function cycles(files: string[]): string[][] {
  const graph = new Map(files.map((f) => [f, importsOf(f).filter((g) => g !== f)]));
  const index = new Map<string, number>();
  const low = new Map<string, number>();
  const stack: string[] = [];
  const on = new Set<string>();
  const groups: string[][] = [];
  let next = 0;
  const visit = (v: string): void => {
    index.set(v, next);
    low.set(v, next);
    next += 1;
    stack.push(v);
    on.add(v);
    for (const w of graph.get(v) ?? []) {
      if (!graph.has(w)) continue;
      if (!index.has(w)) {
        visit(w);
        low.set(v, Math.min(low.get(v)!, low.get(w)!));
      } else if (on.has(w)) low.set(v, Math.min(low.get(v)!, index.get(w)!));
    }
    if (low.get(v) === index.get(v)) {
      const group: string[] = [];
      let w: string;
      do {
        w = stack.pop()!;
        on.delete(w);
        group.push(w);
      } while (w !== v);
      if (group.length > 1) groups.push(group.sort());
    }
  };
  for (const f of files) if (!index.has(f)) visit(f);
  return groups;
}

describe("import cycles (issue 37 item 3)", () => {
  const all = cycles([...sources("src"), ...sources("adapters")]);
  const within = (dir: string) => all.map((g) => g.filter((f) => f.startsWith(dir))).filter((g) => g.length > 1);

  it("the reader finds the imports it is meant to (a known edge of each kind)", () => {
    expect(importsOf("src/outbound.ts")).toContain("src/streaming.ts");
    expect(importsOf("src/worker/pipeline.ts")).toContain("src/worker/deps.ts");
    expect(importsOf("adapters/telegram/outbound.ts")).toContain("adapters/telegram/live.ts");
    expect(importsOf("src/outbound.ts")).toContain("src/sent-ref.ts");
  });

  it("none between src/outbound.ts and src/streaming.ts", () => {
    expect(all.filter((g) => g.includes("src/outbound.ts") && g.includes("src/streaming.ts"))).toEqual([]);
  });

  it("none inside src/worker/", () => {
    expect(within("src/worker/")).toEqual([]);
  });

  it("none through the feature list or the feature contract (issue 37 item 1: a feature never imports the list)", () => {
    expect(all.filter((g) => g.includes("src/features.ts") || g.includes("src/feature.ts"))).toEqual([]);
  });

  it("none inside adapters/telegram/", () => {
    expect(within("adapters/telegram/")).toEqual([]);
  });
});
