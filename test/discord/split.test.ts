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
    const printed = chunks.join("\n").match(/print\((\d+)\)/g)!.map((m) => Number(/\d+/.exec(m)![0]));
    expect(printed).toEqual(Array.from({ length: 30 }, (_, i) => i));
  });

  it("keeps indentation inside code and a tilde fence", () => {
    const code = Array.from({ length: 20 }, (_, i) => `    indented ${i}`).join("\n");
    const chunks = splitMessage(`~~~\n${code}\n~~~`, 80);
    for (const c of chunks) {
      expect(c.startsWith("~~~")).toBe(true);
      expect(c.endsWith("~~~")).toBe(true);
      expect(c.split("\n").slice(1, -1).every((l) => l.startsWith("    indented"))).toBe(true);
    }
  });

  it("closes an unclosed fence at the end", () => {
    const chunks = splitMessage(`\`\`\`js\n${"x();\n".repeat(50)}`, 100);
    for (const c of chunks) expect(fences(c) % 2).toBe(0);
  });
});
