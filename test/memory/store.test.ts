/**
 * The memory store and the memory tool on a real Redis: the scope comes from the context (a
 * person's own in a DM, the group's in a group, a topic sharing its group's), never from the path;
 * concurrent writes to one scope are all kept; erasing is one key gone (from `/memory`'s button,
 * only through its question's button, and only what the question named); the trace and log show
 * sizes, not texts; MEMORY=off loads no memory tool.
 */
import { describe, expect, it } from "vitest";
import { loadConfig } from "../../src/config.js";
import { pressMemoryButton } from "../../src/commands/memory.js";
import { memoryKey, MemoryStore, memoryScopeOf, undoKey, type MemoryScope } from "../../src/memory/store.js";
import { memoryTools } from "../../src/memory/tool.js";
import type { RedisClient } from "../../src/redis.js";
import type { ToolContext } from "../../src/toolbox/tool.js";
import { ToolBox } from "../../src/toolbox/toolbox.js";
import { testConfig } from "../helpers/config.js";
import { captureLogger } from "../helpers/log.js";
import { useRedis } from "../helpers/use-redis.js";

let redis: RedisClient;
useRedis((connection) => {
  redis = connection;
});

const config = testConfig({ MEMORY_MAX_BYTES: "2048" });

function contextOf(
  where: Pick<ToolContext, "platform" | "chatKind" | "chatId" | "userId"> & { topicId?: string },
  log = captureLogger().log,
): ToolContext {
  return {
    ...where,
    userName: "Alice",
    locale: "zh-TW",
    timezone: "Asia/Taipei",
    signal: new AbortController().signal,
    log,
    redis,
    config,
  };
}

describe("the memory store", () => {
  it("scopes: a person's own in a DM, the group's in a group (topics share it)", () => {
    expect(memoryScopeOf({ platform: "telegram", chatKind: "dm", chatId: "42", userId: "42" })).toEqual({
      kind: "personal",
      platform: "telegram",
      userId: "42",
    });
    expect(memoryScopeOf({ platform: "telegram", chatKind: "group", chatId: "-100", userId: "42" })).toEqual({
      kind: "group",
      platform: "telegram",
      chatId: "-100",
    });
    expect(memoryKey({ kind: "personal", platform: "telegram", userId: "42" })).toBe("memory:personal:{telegram:42}");
    expect(memoryKey({ kind: "group", platform: "discord", chatId: "7" })).toBe("memory:group:{discord:7}");
  });

  it("keeps every one of many concurrent writes to one scope, and erases it with one key", async () => {
    const store = new MemoryStore(redis);
    const scope: MemoryScope = { kind: "group", platform: "telegram", chatId: "-1001" };
    await Promise.all(
      Array.from({ length: 12 }, (_, i) =>
        store.update(scope, (files) => {
          const next = new Map(files);
          next.set(`/memories/f${String(i).padStart(2, "0")}.md`, `fact ${i}`);
          return { files: next, result: i };
        }),
      ),
    );
    const files = await store.read(scope);
    expect(files.map((f) => f.path)).toEqual(
      Array.from({ length: 12 }, (_, i) => `/memories/f${String(i).padStart(2, "0")}.md`),
    );
    expect(await redis.ttl(memoryKey(scope))).toBe(-1); // no expiry
    expect(await store.deleteFile(scope, "/memories/f00.md")).toBe(true);
    expect(await store.deleteFile(scope, "/memories/f00.md")).toBe(false);
    expect(await store.erase(scope)).toBe(11);
    expect(await redis.exists(memoryKey(scope))).toBe(0);
    expect(await store.read(scope)).toEqual([]);
  });

  it("erases everything from /memory's button only through its question's button, and only what the question named", async () => {
    const store = new MemoryStore(redis);
    const press = {
      data: "mm:a",
      platform: "line" as const,
      chatId: "Ualice",
      chatKind: "dm" as const,
      userId: "Ualice",
      locale: "zh-TW" as const,
      admin: false,
    };
    const scope = memoryScopeOf(press);
    const remember = (files: [string, string][]) =>
      store.update(scope, (had) => ({ files: new Map([...had, ...files]), result: undefined }));
    await remember([
      ["/memories/家人.md", "妹妹住台中"],
      ["/memories/food.md", "不吃香菜"],
    ]);
    // "Delete all" asks, naming how many files, and erases nothing; a double tap only asks twice.
    const asked = await pressMemoryButton(press, store);
    expect(asked.notice).toBe("請確認是否全部刪除。");
    expect(asked.confirm?.text).toBe("確定要清除你的全部個人記憶（2 個檔案）嗎？清除後無法復原。");
    expect(asked.confirm?.buttons.map((b) => b.label)).toEqual(["⚠️ 確定全部刪除", "取消"]);
    expect(await pressMemoryButton(press, store)).toEqual(asked);
    expect(await store.read(scope)).toHaveLength(2);
    const [yes, keep] = asked.confirm!.buttons.map((b) => b.data);
    expect(yes).toMatch(/^mm:A:[A-Za-z0-9_-]{16}$/);
    // Cancel keeps everything.
    expect(await pressMemoryButton({ ...press, data: keep! }, store)).toEqual({
      notice: "已取消，記憶沒有變更。",
      closeText: "已取消，記憶沒有變更。",
    });
    expect(await store.read(scope)).toHaveLength(2);
    // A memory written after the question is not erased by its answer.
    await remember([["/memories/pet.md", "養了一隻狗"]]);
    const stale = await pressMemoryButton({ ...press, data: yes! }, store);
    expect(stale.closeText).toBe("記憶在詢問之後有變更，所以沒有清除。請再傳送 /memory 查看。");
    expect(await store.read(scope)).toHaveLength(3);
    // Asked again, the answer erases the three files, and their undo records.
    const again = await pressMemoryButton(press, store);
    expect(again.confirm?.text).toContain("（3 個檔案）");
    await redis.hset(undoKey(scope), "h1", "{}");
    const erased = "已清除你的個人記憶（3 個檔案）。對話紀錄不受影響（要清除請用 /reset）。";
    expect(await pressMemoryButton({ ...press, data: again.confirm!.buttons[0]!.data }, store)).toEqual({
      notice: erased,
      closeText: erased,
    });
    expect(await redis.exists(memoryKey(scope), undoKey(scope))).toBe(0);
    // Pressed again (a second tap, or after /forget and a new memory): the memory it named is gone.
    await remember([["/memories/new.md", "新的"]]);
    expect((await pressMemoryButton({ ...press, data: again.confirm!.buttons[0]!.data }, store)).closeText).toBe(
      "記憶在詢問之後有變更，所以沒有清除。請再傳送 /memory 查看。",
    );
    expect(await store.read(scope)).toHaveLength(1);

    // In a group only its administrators may answer; nothing stored is said at once.
    const group = { ...press, platform: "telegram" as const, chatId: "-1002", chatKind: "group" as const };
    const groupScope = memoryScopeOf(group);
    await store.update(groupScope, () => ({ files: new Map([["/memories/meet.md", "週三聚會"]]), result: undefined }));
    const groupAsked = await pressMemoryButton({ ...group, admin: true }, store);
    expect(groupAsked.confirm?.text).toBe("確定要清除這個群組的全部共同記憶（1 個檔案）嗎？清除後無法復原。");
    const groupYes = groupAsked.confirm!.buttons[0]!.data;
    expect((await pressMemoryButton({ ...group, data: groupYes, isGroupAdmin: async () => false }, store)).notice).toBe(
      "在群組裡只有群組管理員可以刪除共同記憶。",
    );
    expect(await store.read(groupScope)).toHaveLength(1);
    expect((await pressMemoryButton({ ...group, data: groupYes, admin: true }, store)).closeText).toBe(
      "已清除這個群組的共同記憶（1 個檔案）。",
    );
    expect(await pressMemoryButton({ ...group, admin: true }, store)).toEqual({
      notice: "沒有需要清除的記憶。",
      closeText: "沒有需要清除的記憶。",
    });
  });

  it("reads a damaged record as empty and says so in the log, without its value", async () => {
    const { log, lines } = captureLogger();
    const scope: MemoryScope = { kind: "personal", platform: "discord", userId: "damaged" };
    await redis.set(memoryKey(scope), '{"files":{"/memories/a.md":"secret text"}}');
    expect(await new MemoryStore(redis, { log }).read(scope)).toEqual([]);
    expect(lines.join("")).toContain("unreadable memory in Redis");
    expect(lines.join("")).not.toContain("secret text");
  });
});

describe("the memory tool", () => {
  const toolbox = new ToolBox(memoryTools(config));

  it("writes the scope of the context, whatever the path says", async () => {
    const dm = contextOf({ platform: "telegram", chatKind: "dm", chatId: "501", userId: "501" });
    const group = contextOf({ platform: "telegram", chatKind: "group", chatId: "-1002", userId: "501" });
    const topic = contextOf({ platform: "telegram", chatKind: "group", chatId: "-1002", userId: "777", topicId: "11" });
    expect(
      await toolbox.execute("memory", { command: "create", path: "/memories/me.md", file_text: "住在新竹" }, dm),
    ).toMatchObject({ ok: true, content: "File created successfully at: /memories/me.md" });
    expect(
      await toolbox.execute("memory", { command: "create", path: "/memories/plan.md", file_text: "週六爬山" }, group),
    ).toMatchObject({ ok: true });
    // The group's memory is the group's in every topic, and holds nothing of the person's own.
    const view = await toolbox.execute("memory", { command: "view", path: "/memories" }, topic);
    expect(view.content).toContain("/memories/plan.md");
    expect(view.content).not.toContain("me.md");
    const store = new MemoryStore(redis);
    expect((await store.read({ kind: "personal", platform: "telegram", userId: "501" })).map((f) => f.text)).toEqual([
      "住在新竹",
    ]);
    expect((await store.read({ kind: "group", platform: "telegram", chatId: "-1002" })).map((f) => f.text)).toEqual([
      "週六爬山",
    ]);
    // Another person's DM sees none of it.
    const other = contextOf({ platform: "telegram", chatKind: "dm", chatId: "502", userId: "502" });
    expect(await toolbox.execute("memory", { command: "view", path: "/memories/me.md" }, other)).toMatchObject({
      ok: false,
      content: "The path /memories/me.md does not exist. Please provide a valid path.",
    });
  });

  it("refuses a path escape and an oversize write with tool errors, and traces sizes only", async () => {
    const { log, lines } = captureLogger();
    const dm = contextOf({ platform: "discord", chatKind: "dm", chatId: "d-1", userId: "600" }, log);
    const events: Record<string, unknown>[] = [];
    const tracer = { event: (type: string, data: Record<string, unknown>) => void events.push({ type, ...data }) };
    const escape = await toolbox.execute("memory", { command: "view", path: "/memories/../../etc/passwd" }, dm);
    expect(escape).toMatchObject({ ok: false });
    expect(escape.content).toMatch(/may not move up/);
    const big = await toolbox.execute(
      "memory",
      { command: "create", path: "/memories/big.md", file_text: "秘".repeat(1000) },
      dm,
      { tracer, toolUseId: "toolu_big" },
    );
    expect(big.ok).toBe(false);
    expect(big.content).toMatch(
      /^Not saved: the memory is limited to 2048 bytes; it holds 0 bytes now, so 2048 bytes are left, and this write would make it 3016 bytes/,
    );
    await toolbox.execute("memory", { command: "create", path: "/memories/s.md", file_text: "機密的事實" }, dm, {
      tracer,
      toolUseId: "toolu_s",
    });
    expect(events.find((e) => e.type === "tool_call" && e.toolUseId === "toolu_s")).toMatchObject({
      input: '{"command":"create","path":"/memories/s.md","file_text_bytes":15}',
    });
    expect(events.find((e) => e.type === "tool_result" && e.toolUseId === "toolu_s")).toMatchObject({
      ok: true,
      preview: "[44 characters]",
    });
    expect(JSON.stringify(events)).not.toContain("機密");
    expect(lines.join("")).not.toContain("機密");
    expect(lines.join("")).not.toContain("秘秘");
  });

  it("is not loaded with MEMORY=off", () => {
    expect(memoryTools(loadConfig({ MEMORY: "off" }, { purpose: "inspect" }))).toEqual([]);
    expect(memoryTools(config).map((t) => [t.name, t.apiDefinition, t.readOnly])).toEqual([
      ["memory", { type: "memory_20250818", name: "memory" }, false],
    ]);
  });
});
