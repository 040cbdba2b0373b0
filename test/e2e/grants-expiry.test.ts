/**
 * Issue 18, "always allow": a grant ends by itself after `ALWAYS_ALLOW_DAYS` (here 0.00015 days,
 * about 13 s), on Telegram and Discord end to end: Redis drops the grant's key by its TTL, or the
 * stored expiry has passed while the key lives on, and the next call of the tool is asked about
 * again. The tests check the TTL and the expiry the bot stored, then move that time on in Redis
 * (the key's TTL run out, the stored expiry in the past) instead of waiting 13 s.
 */
import type { RedisClient } from "../../src/redis.js";
import { expect, it } from "vitest";
import { GrantStore } from "../../src/approvals/grants.js";
import type { FakeUser } from "../fakes/discord.js";
import { seedTodos, todoLines } from "./approvals-helpers.js";
import { eventually, grantsModel } from "./grants-helpers.js";
import { useStack, type Stack } from "./harness.js";

let stack: Stack;
let redis: RedisClient;
useStack({ model: grantsModel, env: { ALWAYS_ALLOW_DAYS: "0.00015" } }, (started, connection) => {
  stack = started;
  redis = connection;
});

const GRANT_MS = Math.round(0.00015 * 86_400_000); // 12 960 ms
const WAIT = 20_000;

/** Runs out `key`'s TTL now (what the wait for it would do) and waits until Redis itself dropped the key. */
async function droppedByRedis(key: string): Promise<void> {
  await redis.pexpire(key, 1);
  await eventually(async () => ((await redis.exists(key)) === 0 ? true : undefined), WAIT, `Redis to drop ${key}`);
}

// The two scenarios share only the stack (own users, chats and todos): they run side by side.
it.concurrent(
  "Telegram: the grant expires; the next call asks again",
  async () => {
    const tg = stack.telegram;
    const user = tg.user(7401, "Gil");
    const chat = tg.privateChat(user);
    await seedTodos(redis, "telegram", "7401", ["一", "二", "三"]);
    tg.sendUserMessage({ chat, from: user, text: "delete #1" });
    const prompt = await tg.waitFor(
      () => tg.sent.find((m) => m.chatId === 7401 && tg.buttons(m).length > 0),
      WAIT,
      "the prompt",
    );
    const always = tg.buttons(prompt).find((b) => b.callback_data!.endsWith(":a"))!.callback_data!;
    const query = tg.pressButton({ from: user, message: prompt, data: always });
    const toast = await tg.waitFor(
      () => tg.callbackAnswers.find((a) => String(a.callback_query_id) === query),
      WAIT,
      "the toast",
    );
    expect(toast.text).toBe("已確認，處理中…之後 13 秒內，你在這裡使用這個工具不會再詢問（/permissions 可撤銷）。");
    await tg.waitFor(
      () => tg.sent.find((m) => m.chatId === 7401 && m.text === "delete_todo: 已刪除：#1 一"),
      WAIT,
      "the answer",
    );
    expect(prompt.text).toBe("✅ 已確認，13 秒內一律允許：刪除待辦 #1「一」");
    const key = new GrantStore(redis, { ttlMs: GRANT_MS }).key({
      platform: "telegram",
      chatId: "7401",
      userId: "7401",
    });
    const ttl = await redis.pttl(key);
    expect(ttl).toBeGreaterThan(0);
    expect(ttl).toBeLessThanOrEqual(GRANT_MS);

    await droppedByRedis(key);
    const seen = tg.sent.length;
    tg.sendUserMessage({ chat, from: user, text: "delete #2" });
    const again = await tg.waitFor(
      () => tg.sent.slice(seen).find((m) => m.chatId === 7401),
      WAIT,
      "the reply to the second delete",
    );
    expect(again.text).toContain("刪除待辦 #2「二」");
    expect(tg.buttons(again)).toHaveLength(3);
    expect(await todoLines(redis, "telegram", "7401")).toEqual(["#2 二", "#3 三"]);
  },
  60_000,
);

it.concurrent(
  "Discord: the grant expires (the stored expiry counts even before Redis drops the key); the next call asks again",
  async () => {
    const dc = stack.discord;
    const hal: FakeUser = { id: "704000000000000001", username: "hal", global_name: "Hal" };
    const channel = dc.dmChannel(hal);
    await seedTodos(redis, "discord", hal.id, ["一", "二"]);
    dc.sendUserMessage(hal, "delete #1", { dm: true });
    const prompt = await dc.waitFor(
      () => dc.sent.find((m) => m.channelId === channel && JSON.stringify(m.payload.components ?? []).includes(":a")),
      WAIT,
      "the prompt",
    );
    const customId = (prompt.payload.components as { components: { custom_id: string }[] }[])[0]!.components.find((c) =>
      c.custom_id.endsWith(":a"),
    )!.custom_id;
    dc.clickButton(hal, prompt.id, customId);
    await dc.waitFor(
      () => dc.sent.find((m) => m.channelId === channel && m.content === "delete_todo: 已刪除：#1 一"),
      WAIT,
      "the answer",
    );
    const store = new GrantStore(redis, { ttlMs: GRANT_MS });
    const owner = { platform: "discord" as const, chatId: channel, userId: hal.id };
    const grant = await store.find(owner, "delete_todo");
    expect(grant).toBeDefined();
    expect(grant!.expiresAt - grant!.grantedAt).toBe(GRANT_MS);
    // Keep the key alive past the grant's own expiry (another grant of the same person here): the stored time still ends it.
    await new GrantStore(redis, { ttlMs: 60_000 }).grant(owner, "some_other_tool");
    // The grant's time runs out: its stored expiry moves into the past, as the wait would leave it.
    const expired = { grantedAt: grant!.grantedAt - GRANT_MS, expiresAt: Date.now() - 1 };
    await redis.hset(store.key(owner), "delete_todo", JSON.stringify(expired));
    expect(await redis.exists(store.key(owner))).toBe(1);

    const since = dc.sent.length;
    dc.sendUserMessage(hal, "delete #2", { dm: true });
    const again = await dc.waitFor(
      () => dc.sent.slice(since).find((m) => m.channelId === channel),
      WAIT,
      "the reply to the second delete",
    );
    expect(again.content).toContain("刪除待辦 #2「二」");
    expect(await todoLines(redis, "discord", hal.id)).toEqual(["#2 二"]);
    expect((await store.list(owner)).map((g) => g.tool)).toEqual(["some_other_tool"]);
  },
  60_000,
);
