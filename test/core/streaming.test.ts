/**
 * The platform-neutral parts of streamed answers (`src/streaming.ts`): the live view built from
 * the run's events and the cutting of live text past a platform's limit. The engine itself
 * (throttling, edits, drafts, the final split) is tested end to end against the fake platforms
 * (`test/e2e/streaming-*.test.ts`).
 */
import { describe, expect, it } from "vitest";
import { silentLogger } from "../../src/log.js";
import { markdownLiteral } from "../../src/plain-text.js";
import { captureLogger } from "../helpers/log.js";
import { LiveAnswer, LiveView, livePieces, statusLine, type EditingSurface } from "../../src/streaming.js";

describe("LiveView", () => {
  it("shows the text as it grows, replaces text that led into a tool call by the call's status line, and keeps status lines above the answer", () => {
    const view = new LiveView();
    expect(view.text()).toBe("");
    view.apply({ type: "text", text: "  我來" });
    view.apply({ type: "text", text: "查一下。" });
    expect(view.text()).toBe("我來查一下。");
    view.apply({ type: "text_dropped" });
    view.apply({ type: "tool_start", id: "t1", activity: "查詢天氣：臺北市" });
    expect(view.text()).toBe("🔧 查詢天氣：臺北市…");
    view.apply({ type: "tool_start", id: "t2", activity: "計算：6*7" });
    view.apply({ type: "tool_end", id: "t1", ok: true });
    view.apply({ type: "tool_end", id: "t2", ok: false });
    expect(view.text()).toBe("🔧 查詢天氣：臺北市 ✓\n🔧 計算：6*7 ✗");
    view.apply({ type: "text", text: "臺北市今天晴。" });
    expect(view.text()).toBe("🔧 查詢天氣：臺北市 ✓\n🔧 計算：6*7 ✗\n\n臺北市今天晴。");
    view.apply({ type: "tool_end", id: "unknown", ok: true }); // an end without a start changes nothing
    expect(view.text()).toBe("🔧 查詢天氣：臺北市 ✓\n🔧 計算：6*7 ✗\n\n臺北市今天晴。");
  });

  it("for a surface that shows live text as Markdown (Discord), its own lines are literals; the answer so far is left as the model wrote it", () => {
    const view = new LiveView({ literal: markdownLiteral });
    view.apply({ type: "lead", text: "🎤 「2*3*4」" });
    view.apply({ type: "tool_start", id: "t1", activity: "新增待辦：**milk** <t:0:R>" });
    view.apply({ type: "tool_end", id: "t1", ok: true });
    view.apply({ type: "notice", text: "⏳ _busy_" });
    expect(view.text()).toBe("🎤 「2\\*3\\*4」\n\n🔧 新增待辦：\\*\\*milk\\*\\* \\<t:0:R> ✓\n\n⏳ \\_busy\\_");
    view.apply({ type: "text", text: "**好了**" });
    expect(view.text()).toBe("🎤 「2\\*3\\*4」\n\n🔧 新增待辦：\\*\\*milk\\*\\* \\<t:0:R> ✓\n\n**好了**");
  });

  it("statusLine marks running, done and failed calls", () => {
    expect(statusLine("讀取待辦清單", "running")).toBe("🔧 讀取待辦清單…");
    expect(statusLine("讀取待辦清單", "ok")).toBe("🔧 讀取待辦清單 ✓");
    expect(statusLine("讀取待辦清單", "failed")).toBe("🔧 讀取待辦清單 ✗");
  });
});

describe("livePieces", () => {
  it("keeps short text whole and drops blank text", () => {
    expect(livePieces("hello", 10)).toEqual(["hello"]);
    expect(livePieces("   ", 10)).toEqual([]);
  });

  it("cuts past the limit at a paragraph, else a line break, else the limit, never inside a surrogate pair, losing only the white space at cuts", () => {
    expect(livePieces("aaaa bbbb\n\ncccc", 12)).toEqual(["aaaa bbbb", "cccc"]);
    expect(livePieces("aaaaaaa\nbbbbbbb", 10)).toEqual(["aaaaaaa", "bbbbbbb"]);
    const emoji = "😀".repeat(7); // 14 UTF-16 units
    const pieces = livePieces(emoji, 5);
    expect(pieces.join("")).toBe(emoji);
    for (const p of pieces) {
      expect(p.length).toBeLessThanOrEqual(5);
      expect(/[\uD800-\uDBFF]$/.test(p)).toBe(false);
    }
    const long = Array.from({ length: 50 }, (_, i) => `第 ${i} 段：${"字".repeat(80)}`).join("\n\n");
    const cut = livePieces(long, 4096);
    expect(cut.length).toBeGreaterThan(1);
    for (const p of cut) expect(p.length).toBeLessThanOrEqual(4096);
    expect(cut.join("\n\n")).toBe(long);
  });
});

/**
 * A platform stand-in for the engine: records every call with its time, splits the final text at
 * `limit` characters, and shows final chunks as plain text (so "unchanged" can be checked).
 */
function recordingSurface(
  options: { limit?: number; drafts?: boolean; failRemove?: boolean; failEdit?: boolean; gone?: Set<string> } = {},
) {
  const calls: { op: string; text?: string; ref?: string; at: number }[] = [];
  let next = 1;
  const limit = options.limit ?? 100;
  const surface: EditingSurface<string> = {
    kind: "editing",
    limit,
    ...(options.drafts
      ? { draft: async (text: string) => void calls.push({ op: "draft", text, at: performance.now() }) }
      : {}),
    async post(text) {
      const ref = { chatId: "c", messageId: String(next++) };
      calls.push({ op: "post", text, ref: ref.messageId, at: performance.now() });
      return ref;
    },
    async edit(ref, text, shown) {
      if (shown === text) throw new Error("unchanged edit");
      calls.push({ op: "edit", text, ref: ref.messageId, at: performance.now() });
      if (options.failEdit) throw new Error("HTTP 400: Bad Request");
    },
    async remove(ref) {
      calls.push({ op: "remove", ref: ref.messageId, at: performance.now() });
      if (options.failRemove) throw new Error("HTTP 500: Internal Server Error");
    },
    finalChunks: (text) => livePieces(text, limit),
    plainOf: (chunk) => chunk,
    async postFinal(chunk) {
      const ref = { chatId: "c", messageId: String(next++) };
      calls.push({ op: "postFinal", text: chunk, ref: ref.messageId, at: performance.now() });
      return ref;
    },
    async editFinal(ref, chunk, index, shown) {
      if (shown === chunk) throw new Error("unchanged final edit");
      if (options.gone?.has(ref.messageId)) return surface.postFinal(chunk, index); // deleted in the chat: posted anew
      calls.push({ op: "editFinal", text: chunk, ref: ref.messageId, at: performance.now() });
    },
  };
  return { surface, calls };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("LiveAnswer", () => {
  it("posts the first text at once, edits each message at most once per interval and never to the same text, and finishes with the final chunks", async () => {
    const { surface, calls } = recordingSurface({ limit: 100 });
    let visible = 0;
    const live = new LiveAnswer(surface, { intervalMs: 300, log: silentLogger, onVisible: () => (visible += 1) });
    const started = performance.now();
    for (let i = 0; i < 40; i++) {
      live.push({ type: "text", text: `${i % 10}`.repeat(4) + " " });
      await sleep(25);
    }
    const answer = Array.from({ length: 40 }, (_, i) => `${i % 10}`.repeat(4)).join(" ");
    await live.finish(answer);
    expect(visible).toBe(1);
    expect(calls[0]!.op).toBe("post");
    expect(calls[0]!.at - started).toBeLessThan(300); // no interval waited before the first text
    for (const ref of new Set(calls.map((c) => c.ref))) {
      const mine = calls.filter((c) => c.ref === ref && c.op !== "remove");
      for (let i = 1; i < mine.length; i++) {
        expect(mine[i]!.at - mine[i - 1]!.at).toBeGreaterThanOrEqual(295);
        expect(mine[i]!.text).not.toBe(mine[i - 1]!.text);
      }
    }
    // the final state of each message is its final chunk
    const finalOf = (ref: string) => calls.filter((c) => c.ref === ref && c.text !== undefined).at(-1)!.text;
    expect(live.messages.map((m) => finalOf(m.messageId))).toEqual(livePieces(answer, 100));
  });

  it("the final edit waits only what is left of the message's interval, and goes at once when its last edit is older", async () => {
    // Finished soon after the first post: the final edit waits out the rest of the interval, no more.
    const quick = recordingSurface();
    const soon = new LiveAnswer(quick.surface, { intervalMs: 600, log: silentLogger });
    soon.push({ type: "text", text: "echo:" });
    await sleep(100);
    const askedSoon = performance.now();
    await soon.finish("echo: hello");
    expect(quick.calls.map((c) => [c.op, c.text])).toEqual([
      ["post", "echo:"],
      ["editFinal", "echo: hello"],
    ]);
    const gap = quick.calls[1]!.at - quick.calls[0]!.at;
    expect(gap).toBeGreaterThanOrEqual(595); // never two updates within one interval
    expect(quick.calls[1]!.at - askedSoon).toBeLessThan(600); // waited the remainder, not a whole new interval
    // Finished after the interval passed: the final edit goes at once.
    const late = recordingSurface();
    const old = new LiveAnswer(late.surface, { intervalMs: 200, log: silentLogger });
    old.push({ type: "text", text: "echo:" });
    await sleep(400);
    const askedLate = performance.now();
    await old.finish("echo: hello");
    expect(late.calls.map((c) => c.op)).toEqual(["post", "editFinal"]);
    expect(late.calls[1]!.at - askedLate).toBeLessThan(100);
  });

  it("deletes live messages the final answer does not need, and edits a message posted by an earlier attempt even when its text looks the same", async () => {
    const { surface, calls } = recordingSurface({ limit: 10 });
    const live = new LiveAnswer(surface, {
      intervalMs: 10,
      log: silentLogger,
      resume: [
        { chatId: "c", messageId: "90" },
        { chatId: "c", messageId: "91" },
      ],
    });
    await live.finish("short");
    expect(calls.map((c) => [c.op, c.ref, c.text])).toEqual([
      ["editFinal", "90", "short"],
      ["remove", "91", undefined],
    ]);
    expect(live.messages).toEqual([{ chatId: "c", messageId: "90" }]);
  });

  it("a live message beyond the final chunks that cannot be deleted is logged: finish still resolves with the final messages", async () => {
    const { surface, calls } = recordingSurface({ limit: 10, failRemove: true });
    const { log, lines } = captureLogger("warn");
    const saved: string[][] = [];
    const sent: [number, string][] = [];
    const resume = [90, 91, 92].map((id) => ({ chatId: "c", messageId: String(id) }));
    const live = new LiveAnswer(surface, {
      intervalMs: 10,
      log,
      resume,
      onMessages: async (refs) => void saved.push(refs.map((r) => r.messageId)),
    });
    const refs = await live.finish("short", { onSent: (i, ref) => void sent.push([i, ref.messageId]) });
    expect(refs).toEqual([{ chatId: "c", messageId: "90" }]);
    expect(sent).toEqual([[0, "90"]]);
    expect(calls.map((c) => [c.op, c.ref])).toEqual([
      ["editFinal", "90"],
      ["remove", "91"],
      ["remove", "92"],
    ]);
    expect(live.messages).toEqual([{ chatId: "c", messageId: "90" }]);
    expect(saved.at(-1)).toEqual(["90"]);
    expect(lines.filter((l) => l.includes("could not delete a live answer message"))).toHaveLength(2);
  });

  it(
    "a message deleted in the chat before the final edit: its chunk is posted anew, the later " +
      "chunks after it (their old messages deleted), and the new list is saved",
    async () => {
      const { surface, calls } = recordingSurface({ limit: 10, gone: new Set(["90"]) });
      const saved: string[][] = [];
      const sent: [number, string][] = [];
      const resume = [90, 91].map((id) => ({ chatId: "c", messageId: String(id) }));
      const live = new LiveAnswer(surface, {
        intervalMs: 10,
        log: silentLogger,
        resume,
        onMessages: async (refs) => void saved.push(refs.map((r) => r.messageId)),
      });
      const refs = await live.finish("aaaa bbbb\n\ncccc dddd", {
        onSent: (i, ref) => void sent.push([i, ref.messageId]),
      });
      expect(calls.map((c) => [c.op, c.ref, c.text])).toEqual([
        ["postFinal", "1", "aaaa bbbb"],
        ["remove", "91", undefined],
        ["postFinal", "2", "cccc dddd"],
      ]);
      expect(refs.map((r) => r.messageId)).toEqual(["1", "2"]);
      expect(live.messages.map((r) => r.messageId)).toEqual(["1", "2"]);
      expect(saved).toEqual([["1"], ["1", "2"]]);
      expect(sent).toEqual([
        [0, "1"],
        [1, "2"],
      ]);
    },
  );

  it("a failing update is retried an interval later, not at once", async () => {
    const { surface, calls } = recordingSurface({ failEdit: true });
    const live = new LiveAnswer(surface, { intervalMs: 100, log: silentLogger });
    live.push({ type: "text", text: "一" });
    await sleep(20);
    live.push({ type: "text", text: "二" });
    await sleep(500);
    await live.pause();
    const edits = calls.filter((c) => c.op === "edit");
    expect(edits.length).toBeGreaterThanOrEqual(2); // retried…
    expect(edits.length).toBeLessThanOrEqual(6); // …about once per interval
    for (let i = 1; i < edits.length; i++) expect(edits[i]!.at - edits[i - 1]!.at).toBeGreaterThanOrEqual(95);
  });

  it("drafts: shown at once, then at most once per interval, and sent again when unchanged for the refresh time (a draft lasts 30 s)", async () => {
    const { surface, calls } = recordingSurface({ drafts: true });
    const live = new LiveAnswer(surface, { intervalMs: 100, log: silentLogger }, 150);
    live.push({ type: "tool_start", id: "t", activity: "查詢天氣：臺北市" });
    await sleep(700);
    live.push({ type: "tool_end", id: "t", ok: true });
    await sleep(120);
    await live.finish("晴天");
    const drafts = calls.filter((c) => c.op === "draft");
    expect(drafts[0]!.text).toBe("🔧 查詢天氣：臺北市…");
    expect(drafts.filter((d) => d.text === "🔧 查詢天氣：臺北市…").length).toBeGreaterThanOrEqual(3); // refreshed while the tool ran
    expect(drafts.some((d) => d.text === "🔧 查詢天氣：臺北市 ✓")).toBe(true);
    expect(calls.at(-1)).toMatchObject({ op: "postFinal", text: "晴天" });
    expect(calls.filter((c) => c.op === "post" || c.op === "edit")).toEqual([]);
  });

  it("discard deletes every posted message and stops updating", async () => {
    const { surface, calls } = recordingSurface();
    const live = new LiveAnswer(surface, { intervalMs: 50, log: silentLogger });
    live.push({ type: "text", text: "部分回答" });
    await sleep(30);
    await live.discard();
    live.push({ type: "text", text: "更多" });
    await sleep(80);
    expect(calls.map((c) => c.op)).toEqual(["post", "remove"]);
    expect(live.messages).toEqual([]);
  });
});
