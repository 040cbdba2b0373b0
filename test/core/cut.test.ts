/**
 * A text cut short is marked with one `…`, however many times it is cut (newcomer round 4: a
 * calculation's status line showed `999…9……`): the real toolbox's activity of the shipped
 * `calculate` tool, the live answer's status line of it, and trace previews of previews.
 */
import { describe, expect, it } from "vitest";
import { cutChars, cutFileName, cutUnits, sliceUnits, withEllipsis } from "../../src/cut.js";
import { LiveView, statusLine } from "../../src/streaming.js";
import { MAX_ACTIVITY_CHARS } from "../../src/toolbox/toolbox.js";
import { preview } from "../../src/trace/tracer.js";
import { testConfig } from "../helpers/config.js";
import { loadShippedTools } from "../tools/load.js";

describe("cutChars, cutUnits, withEllipsis", () => {
  it("cut once: max - 1 characters and one …; a text that fits is left as it is", () => {
    expect(cutChars("abcdef", 4)).toBe("abc…");
    expect(cutChars("abcd", 4)).toBe("abcd");
    expect(cutChars("計算：一二三四五", 5)).toBe("計算：一…");
    // Code points: an emoji is never split.
    expect(cutChars("😀😀😀😀", 3)).toBe("😀😀…");
    expect(cutUnits("😀😀😀😀", 4)).toBe("😀…");
  });

  it("is idempotent: cutting again, or to less, adds no second mark", () => {
    const once = cutChars("9".repeat(100), 60);
    expect(cutChars(once, 60)).toBe(once);
    expect(cutChars(once, 30)).toBe(`${"9".repeat(29)}…`);
    // A cut that lands right after a mark or a space the text already had keeps one mark.
    expect(cutChars("999… 9999999", 6)).toBe("999…");
    expect(cutChars("ab...cdefgh", 6)).toBe("ab…");
    expect(cutUnits(cutUnits("x".repeat(500), 300), 300)).toHaveLength(300);
  });

  it("withEllipsis marks a text once: ending … or ... (with spaces) become one …", () => {
    expect(withEllipsis("查詢天氣")).toBe("查詢天氣…");
    expect(withEllipsis("999…")).toBe("999…");
    expect(withEllipsis("wait...")).toBe("wait…");
    expect(withEllipsis("wait … … ")).toBe("wait…");
  });
});

describe("sliceUnits, cutFileName: cuts by UTF-16 units that never leave half a surrogate pair", () => {
  it("sliceUnits keeps at most max units, one less rather than the high half of a pair, and adds no mark", () => {
    expect(sliceUnits("abcdef", 4)).toBe("abcd");
    expect(sliceUnits("abc", 4)).toBe("abc");
    expect(sliceUnits("a😀b", 2)).toBe("a");
    expect(sliceUnits("a😀b", 3)).toBe("a😀");
    expect(sliceUnits("😀", 0)).toBe("");
    expect(sliceUnits("a\ud800", 1)).toBe("a");
    for (let max = 0; max <= 8; max += 1) expect(sliceUnits("😀x😀y😀", max).isWellFormed()).toBe(true);
  });

  it("cutFileName cuts the part before the extension, so the extension (how the file is read) stays", () => {
    const name = `${"a".repeat(254)}😀.txt`;
    expect(name.slice(0, 255).isWellFormed()).toBe(false); // what LINE's adapter kept before
    expect(cutFileName(name, 255)).toBe(`${"a".repeat(251)}.txt`);
    expect(cutFileName(`${"😀".repeat(200)}.md`, 255)).toBe(`${"😀".repeat(126)}.md`);
    expect(cutFileName("short.pdf", 255)).toBe("short.pdf");
    expect(cutFileName(`${"b".repeat(300)}`, 255)).toBe("b".repeat(255));
    expect(cutFileName(`${"c".repeat(10)}.verylongextension`, 12)).toBe("c".repeat(10) + ".v");
  });
});

describe("a tool line cut twice", () => {
  it("the shipped calculate tool's running status line of a long expression ends with one …, in both languages", async () => {
    const { toolbox } = await loadShippedTools(testConfig({ CWA_API_KEY: "CWA-TEST-KEY-0123456789" }));
    const expression = `${"9".repeat(120)}+1`;
    for (const [locale, lead] of [
      ["zh-TW", "計算："],
      ["en", "Calculating: "],
    ] as const) {
      const activity = toolbox.activity("calculate", { expression }, locale);
      expect([...activity]).toHaveLength(MAX_ACTIVITY_CHARS);
      expect(activity).toBe(`${lead}${"9".repeat(MAX_ACTIVITY_CHARS - 1 - [...lead].length)}…`);
      expect(statusLine(activity, "running")).toBe(`🔧 ${activity}`);
      expect(statusLine(activity, "running", "🔧", "2/5")).toBe(`🔧 ${activity} (2/5)`);
      expect(statusLine(activity, "ok")).toBe(`🔧 ${activity} ✓`);

      // As the live answer shows it while the call runs.
      const view = new LiveView();
      view.apply({ type: "tool_start", id: "t1", activity });
      expect(view.text()).not.toContain("……");
      expect(view.text()).toBe(`🔧 ${activity}`);
    }
    // A short activity still gets its running mark.
    expect(statusLine(toolbox.activity("calculate", { expression: "6*7" }, "zh-TW"), "running")).toBe("🔧 計算：6*7…");
  });

  it("a trace preview of a preview (trace store, span) keeps one …", () => {
    const input = JSON.stringify({ expression: "9".repeat(400) });
    const once = preview(input);
    expect(once.endsWith("9…")).toBe(true);
    expect(preview(once)).toBe(once);
    expect(preview(once, 200)).toBe(`${once.slice(0, 199)}…`);
    expect(preview(once, 200)).not.toContain("……");
  });
});
