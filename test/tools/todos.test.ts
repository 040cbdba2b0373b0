import type { RedisClient } from "../../src/redis.js";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import { connectRedis } from "../../src/redis.js";
import type { ToolContext } from "../../src/toolbox/tool.js";
import type { ToolBox } from "../../src/toolbox/toolbox.js";
import { testContext } from "../helpers/context.js";
import { startRedis, type TestRedis } from "../helpers/redis.js";
import { loadShippedTools } from "./load.js";

let server: TestRedis;
let redis: RedisClient;
let toolbox: ToolBox;

beforeAll(async () => {
  server = await startRedis();
  redis = connectRedis(server.url);
  ({ toolbox } = await loadShippedTools());
});
afterAll(async () => {
  await redis.quit();
  await server.stop();
});
beforeEach(async () => {
  await redis.flushdb();
  vi.useFakeTimers({ toFake: ["Date"] });
  vi.setSystemTime(new Date("2026-11-29T07:04:05Z"));
});
afterEach(() => {
  vi.useRealTimers();
});

const alice = (overrides: Partial<ToolContext> = {}) => testContext({ redis, ...overrides });
const bob = (overrides: Partial<ToolContext> = {}) =>
  testContext({ redis, userId: "u2", userName: "Bob", ...overrides });
const run = (name: string, input: unknown, context = alice()) => toolbox.execute(name, input, context);

describe("add_todo", () => {
  it("refuses the 201st todo of a person with a tool error that says what to do, and writes nothing", async () => {
    const items = Object.fromEntries(
      Array.from({ length: 199 }, (_, i) => [
        String(i + 1),
        JSON.stringify({ id: i + 1, title: `t${i + 1}`, createdAt: "2026-11-29T00:00:00.000Z" }),
      ]),
    );
    await redis.hset("todo:{telegram:u1}:items", items);
    await redis.set("todo:{telegram:u1}:seq", "199");
    expect(await run("add_todo", { title: "the 200th" })).toMatchObject({
      ok: true,
      content: "已新增待辦：#200 the 200th",
    });
    const refused = await run("add_todo", { title: "one too many" });
    expect(refused.ok).toBe(false);
    expect(refused.content).toMatch(/already holds 200 items .* "one too many" was not added.*delete_todo/);
    expect(await redis.hlen("todo:{telegram:u1}:items")).toBe(200);
    expect(await redis.get("todo:{telegram:u1}:seq")).toBe("200");
    // another person's list is not affected
    expect(await run("add_todo", { title: "Bob's" }, bob())).toMatchObject({
      ok: true,
      content: "已新增待辦：#1 Bob's",
    });
  });

  it("adds with trimmed title and optional due date, ids counting up", async () => {
    expect(await run("add_todo", { title: "  買牛奶 ", due: "2026-12-01" })).toMatchObject({
      ok: true,
      content: "已新增待辦：#1 買牛奶（到期 2026-12-01）",
    });
    expect(await run("add_todo", { title: "寄信", due: "" })).toMatchObject({
      ok: true,
      content: "已新增待辦：#2 寄信",
    });
    expect(await run("add_todo", { title: "Call mom", due: "2028-02-29" }, alice({ locale: "en" }))).toMatchObject({
      ok: true,
      content: "Added to your todos: #3 Call mom (due 2028-02-29)",
    });
    expect((await redis.hkeys("todo:{telegram:u1}:items")).sort()).toEqual(["1", "2", "3"]);
    expect(JSON.parse((await redis.hget("todo:{telegram:u1}:items", "1"))!)).toEqual({
      id: 1,
      title: "買牛奶",
      due: "2026-12-01",
      createdAt: "2026-11-29T07:04:05.000Z",
    });
  });

  it(
    "stores a title as one plain line: terminal escapes, NUL, BEL, bidi overrides and line " +
      "breaks never reach a list or a terminal; a title of only those is empty",
    async () => {
      const hostile = "bell\u0007 esc\u001b[31mRED\u001b[0m nul\u0000 bidi\u202eevil\u202c\nsecond line\u200b!";
      expect(await run("add_todo", { title: hostile }, alice({ userId: "u-plain" }))).toMatchObject({
        ok: true,
        content: "已新增待辦：#1 bell esc [31mRED [0m nul bidievil second line!",
      });
      expect(JSON.parse((await redis.hget("todo:{telegram:u-plain}:items", "1"))!).title).toBe(
        "bell esc [31mRED [0m nul bidievil second line!",
      );
      expect(
        (await run("add_todo", { title: "\u001b\u0007\u200b\n" }, alice({ userId: "u-plain" }))).content,
      ).toContain("- title: the title is empty: give the todo a short title");
    },
  );

  it("accepts a title of exactly 200 characters (emoji count as one) and refuses 201", async () => {
    const twoHundred = "🥛".repeat(200);
    expect(await run("add_todo", { title: twoHundred })).toMatchObject({
      ok: true,
      content: `已新增待辦：#1 ${twoHundred}`,
    });
    expect(await run("add_todo", { title: "a".repeat(201) })).toMatchObject({
      ok: false,
      content:
        'Invalid input for tool "add_todo":\n- title: the title is longer than 200 characters: shorten it\nFix these fields and call the tool again.',
    });
  });

  it.each([
    [{ title: "   " }, "title: the title is empty: give the todo a short title"],
    [{ title: "x", due: "2026-02-30" }, "due: expected a real date written YYYY-MM-DD, e.g. 2026-12-01"],
    [{ title: "x", due: "2027-02-29" }, "due: expected a real date written YYYY-MM-DD, e.g. 2026-12-01"],
    [{ title: "x", due: "tomorrow" }, "due: expected a real date written YYYY-MM-DD, e.g. 2026-12-01"],
    [{ title: "x", due: "2026/12/01" }, "due: expected a real date written YYYY-MM-DD, e.g. 2026-12-01"],
  ])("refuses %j and stores nothing", async (input, problem) => {
    expect(await run("add_todo", input)).toMatchObject({
      ok: false,
      content: `Invalid input for tool "add_todo":\n- ${problem}\nFix these fields and call the tool again.`,
    });
    expect(await redis.exists("todo:{telegram:u1}:items")).toBe(0);
  });

  it("gives 50 parallel adds 50 distinct ids", async () => {
    const results = await Promise.all(Array.from({ length: 50 }, (_, i) => run("add_todo", { title: `item ${i}` })));
    const ids = results.map((r) => Number(/^已新增待辦：#(\d+) /.exec(r.content)?.[1]));
    expect(new Set(ids).size).toBe(50);
    expect([...ids].sort((a, b) => a - b)).toEqual(Array.from({ length: 50 }, (_, i) => i + 1));
    expect(await redis.hlen("todo:{telegram:u1}:items")).toBe(50);
  });
});

describe("list_todos", () => {
  it("shows open items by default and everything on request", async () => {
    expect(await run("list_todos", {})).toMatchObject({ ok: true, content: "你的待辦清單是空的。" });
    await run("add_todo", { title: "買牛奶", due: "2026-12-01" });
    await run("add_todo", { title: "寄信" });
    await run("add_todo", { title: "繳電費", due: "2026-12-15" });
    vi.setSystemTime(new Date("2026-11-30T16:30:00Z")); // 2026-12-01 00:30 in Taipei
    await run("complete_todo", { todo_id: 2 });

    expect((await run("list_todos", {})).content).toBe(
      "你的待辦（2 項未完成）：\n#1 買牛奶（到期 2026-12-01）\n#3 繳電費（到期 2026-12-15）",
    );
    expect((await run("list_todos", { include_completed: true })).content).toBe(
      "你的全部待辦（2 項未完成，1 項已完成）：\n#1 買牛奶（到期 2026-12-01）\n#2 寄信（已完成 2026-12-01）\n#3 繳電費（到期 2026-12-15）",
    );
    expect((await run("list_todos", { include_completed: "false" })).content).toBe(
      "你的待辦（2 項未完成）：\n#1 買牛奶（到期 2026-12-01）\n#3 繳電費（到期 2026-12-15）",
    );
    expect(
      (await run("list_todos", { include_completed: true }, alice({ locale: "en", timezone: "UTC" }))).content,
    ).toBe(
      "All your todos (2 open, 1 done):\n#1 買牛奶 (due 2026-12-01)\n#2 寄信 (done 2026-11-30)\n#3 繳電費 (due 2026-12-15)",
    );
  });

  it("says when everything is done", async () => {
    await run("add_todo", { title: "寄信" });
    await run("complete_todo", { todo_id: 1 });
    expect((await run("list_todos", {})).content).toBe(
      "沒有未完成的待辦（已完成 1 項；要看全部請設 include_completed）。",
    );
  });

  it("follows the person between chats, never the chat", async () => {
    await run("add_todo", { title: "買牛奶" }, alice({ chatId: "100", chatKind: "dm" }));
    expect((await run("list_todos", {}, alice({ chatId: "-500", chatKind: "group" }))).content).toBe(
      "你的待辦（1 項未完成）：\n#1 買牛奶",
    );
    expect((await run("list_todos", {}, bob({ chatId: "-500", chatKind: "group" }))).content).toBe(
      "你的待辦清單是空的。",
    );
    expect((await run("list_todos", {}, alice({ platform: "discord" }))).content).toBe("你的待辦清單是空的。");
  });
});

describe("complete_todo", () => {
  it("marks an item done, and says so (not an error) when it already is", async () => {
    await run("add_todo", { title: "買牛奶", due: "2026-12-01" });
    expect(await run("complete_todo", { todo_id: 1 })).toMatchObject({
      ok: true,
      content: "已完成：#1 買牛奶（到期 2026-12-01，已完成 2026-11-29）",
    });
    expect(await run("complete_todo", { todo_id: "1" })).toMatchObject({
      ok: true,
      content: "#1 早就完成了，沒有變更：#1 買牛奶（到期 2026-12-01，已完成 2026-11-29）",
    });
    expect(JSON.parse((await redis.hget("todo:{telegram:u1}:items", "1"))!).completedAt).toBe(
      "2026-11-29T07:04:05.000Z",
    );
  });

  it("refuses an id that does not exist, naming it", async () => {
    expect(await run("complete_todo", { todo_id: 7 })).toMatchObject({
      ok: false,
      content: "你的待辦清單裡沒有 #7。請先用 list_todos 查看正確的編號。",
    });
    expect(await run("complete_todo", { todo_id: 7 }, alice({ locale: "en" }))).toMatchObject({
      ok: false,
      content: "There is no todo #7 in your list. Check the numbers with list_todos first.",
    });
    expect(await run("complete_todo", { todo_id: "abc" })).toMatchObject({
      ok: false,
      content:
        'Invalid input for tool "complete_todo":\n- todo_id: expected an integer, got "abc"\nFix these fields and call the tool again.',
    });
  });

  it("cannot complete another person's todo", async () => {
    await run("add_todo", { title: "買牛奶" });
    expect(await run("complete_todo", { todo_id: 1 }, bob())).toMatchObject({
      ok: false,
      content: "你的待辦清單裡沒有 #1。請先用 list_todos 查看正確的編號。",
    });
    expect(await run("complete_todo", { todo_id: 1 }, alice({ platform: "discord" }))).toMatchObject({ ok: false });
    expect(JSON.parse((await redis.hget("todo:{telegram:u1}:items", "1"))!).completedAt).toBeUndefined();
  });
});

describe("delete_todo", () => {
  it("is dangerous and describes the action with the title for the approval prompt", async () => {
    const tool = toolbox.get("delete_todo")!;
    expect(tool.dangerous).toBe(true);
    expect(toolbox.schemas({ excludeDangerous: true }).map((s) => s.name)).not.toContain("delete_todo");
    await run("add_todo", { title: "買牛奶" });
    await run("add_todo", { title: "寄信" });
    await run("add_todo", { title: "Buy milk" });
    expect(await tool.describe!({ todo_id: 3 }, alice())).toBe("刪除待辦 #3「Buy milk」");
    expect(await tool.describe!({ todo_id: 1 }, alice({ locale: "en" }))).toBe('Delete todo #1 "買牛奶"');
    expect(await redis.hlen("todo:{telegram:u1}:items")).toBe(3); // describing changed nothing
    // Nothing to delete (not in the list, or someone else's): refused before any prompt.
    expect(await toolbox.prepare("delete_todo", { todo_id: 9 }, alice())).toEqual({
      ok: false,
      content: expect.stringContaining("#9"),
    });
    expect(await toolbox.prepare("delete_todo", { todo_id: 1 }, bob())).toEqual({
      ok: false,
      content: expect.stringContaining("#1"),
    });
    expect(await toolbox.prepare("delete_todo", { todo_id: 1 }, alice())).toEqual({
      ok: true,
      action: "刪除待辦 #1「買牛奶」",
    });
    expect(await toolbox.prepare("delete_todo", { todo_id: "x" }, alice())).toEqual({
      ok: false,
      content: expect.stringContaining("todo_id: expected an integer"),
    });
  });

  it("deletes, and never reuses the id", async () => {
    await run("add_todo", { title: "買牛奶" });
    await run("add_todo", { title: "寄信", due: "2026-12-02" });
    expect(await run("delete_todo", { todo_id: 2 })).toMatchObject({
      ok: true,
      content: "已刪除：#2 寄信（到期 2026-12-02）",
    });
    expect(await run("delete_todo", { todo_id: 2 })).toMatchObject({
      ok: false,
      content: "你的待辦清單裡沒有 #2。請先用 list_todos 查看正確的編號。",
    });
    expect((await run("add_todo", { title: "繳電費" })).content).toBe("已新增待辦：#3 繳電費");
    expect((await run("list_todos", { include_completed: true })).content).toBe(
      "你的全部待辦（2 項未完成，0 項已完成）：\n#1 買牛奶\n#3 繳電費",
    );
  });

  it("cannot delete another person's todo", async () => {
    await run("add_todo", { title: "買牛奶" });
    expect(await run("delete_todo", { todo_id: 1 }, bob())).toMatchObject({
      ok: false,
      content: "你的待辦清單裡沒有 #1。請先用 list_todos 查看正確的編號。",
    });
    expect(await run("delete_todo", { todo_id: 1 }, bob({ locale: "en" }))).toMatchObject({
      ok: false,
      content: "There is no todo #1 in your list. Check the numbers with list_todos first.",
    });
    expect((await run("list_todos", {})).content).toBe("你的待辦（1 項未完成）：\n#1 買牛奶");
  });

  it("a completion racing a delete never brings the todo back", async () => {
    await run("add_todo", { title: "買牛奶" });
    await Promise.all([run("complete_todo", { todo_id: 1 }), run("delete_todo", { todo_id: 1 })]);
    expect(await redis.hlen("todo:{telegram:u1}:items")).toBe(0);
  });
});
