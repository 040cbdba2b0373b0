import { describe, expect, it } from "vitest";
import { DISCORD_MESSAGE_LIMIT, splitMessage } from "../../adapters/discord/split.js";

const fences = (s: string) => (s.match(/^```/gm) ?? []).length;

describe("splitMessage", () => {
  it("keeps a short text whole and drops a blank one", () => {
    expect(splitMessage("hello")).toEqual(["hello"]);
    expect(splitMessage(" \n\n ")).toEqual([]);
    expect(splitMessage("a".repeat(DISCORD_MESSAGE_LIMIT))).toHaveLength(1);
  });

  it("prefers paragraph breaks, then line breaks", () => {
    const p = `${"a".repeat(60)}\n\n${"b".repeat(30)}\n${"c".repeat(30)}`;
    expect(splitMessage(p, 100)).toEqual(["a".repeat(60), `${"b".repeat(30)}\n${"c".repeat(30)}`]);
    const l = `${"a".repeat(70)}\n${"b".repeat(70)}`;
    expect(splitMessage(l, 100)).toEqual(["a".repeat(70), "b".repeat(70)]);
  });

  it("never cuts a surrogate pair", () => {
    const text = "😀".repeat(150); // 300 UTF-16 units, no break anywhere
    const chunks = splitMessage(text, 101);
    for (const c of chunks) {
      expect(c.length).toBeLessThanOrEqual(101);
      expect(c).not.toMatch(/^[\uDC00-\uDFFF]|[\uD800-\uDBFF]$/);
    }
    expect(chunks.join("")).toBe(text);
  });

  it("closes and reopens a code fence with its language", () => {
    const code = Array.from({ length: 30 }, (_, i) => `print(${i})`).join("\n");
    const chunks = splitMessage(`Here:\n\`\`\`python\n${code}\n\`\`\`\ndone`, 120);
    expect(chunks.length).toBeGreaterThan(2);
    for (const c of chunks) {
      expect(c.length).toBeLessThanOrEqual(120);
      expect(fences(c) % 2).toBe(0);
    }
    expect(chunks.slice(1, -1).every((c) => c.startsWith("```python\n"))).toBe(true);
    const printed = chunks
      .join("\n")
      .match(/print\((\d+)\)/g)!
      .map((m) => Number(/\d+/.exec(m)![0]));
    expect(printed).toEqual(Array.from({ length: 30 }, (_, i) => i));
  });

  it("keeps indentation inside code and a tilde fence", () => {
    const code = Array.from({ length: 20 }, (_, i) => `    indented ${i}`).join("\n");
    const chunks = splitMessage(`~~~\n${code}\n~~~`, 80);
    for (const c of chunks) {
      expect(c.startsWith("~~~")).toBe(true);
      expect(c.endsWith("~~~")).toBe(true);
      expect(
        c
          .split("\n")
          .slice(1, -1)
          .every((l) => l.startsWith("    indented")),
      ).toBe(true);
    }
  });

  it("closes an unclosed fence at the end", () => {
    const chunks = splitMessage(`\`\`\`js\n${"x();\n".repeat(50)}`, 100);
    for (const c of chunks) expect(fences(c) % 2).toBe(0);
  });
});

describe("splitMessage on generated Markdown", () => {
  // A small seeded PRNG (mulberry32) so failures are reproducible.
  function rng(seed: number) {
    return () => {
      seed = (seed + 0x6d2b79f5) | 0;
      let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
      t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
      return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
  }
  const pieces = ["word", "字詞", "😀", " ", " ", "\n", "\n\n", "**bold**", "`x`", "長長的句子，", "a".repeat(50)];

  it("keeps every chunk within the limit, fences balanced, no split pair, nothing lost or reordered", () => {
    const random = rng(42);
    for (let n = 0; n < 300; n++) {
      const parts: string[] = [];
      let inCode = false;
      const length = 50 + Math.floor(random() * 600);
      for (let i = 0; i < length; i++) {
        if (random() < 0.02) {
          parts.push(inCode ? "\n```\n" : `\n\`\`\`${random() < 0.5 ? "ts" : ""}\n`);
          inCode = !inCode;
        } else parts.push(pieces[Math.floor(random() * pieces.length)]!);
      }
      if (inCode) parts.push("\n```");
      const text = parts.join("");
      const limit = 40 + Math.floor(random() * 400);
      const chunks = splitMessage(text, limit);
      for (const c of chunks) {
        expect(c.length).toBeLessThanOrEqual(limit);
        expect(fences(c) % 2).toBe(0);
        expect(/^[\uDC00-\uDFFF]/.test(c) || /[\uD800-\uDBFF]$/.test(c)).toBe(false);
      }
      const strip = (s: string) => s.replace(/^ {0,3}```.*$/gm, "").replace(/\s+/g, "");
      expect(strip(chunks.join("\n"))).toBe(strip(text));
    }
  });
});
