/**
 * Issue 25 item 12 end to end: a Telegram group upgraded to a supergroup gets a new chat id. The
 * fake Bot API answers every call to the old id with the real `400 Bad Request: group chat was
 * upgraded to a supergroup chat` and `parameters.migrate_to_chat_id`, and sends the service
 * messages `migrate_to_chat_id` / `migrate_from_chat_id`. The answer goes to the new chat, and the
 * conversation's data (history, settings, group enablement, group memory, grants, reminders: the core's and every feature's conversation stores)
 * carries over — once, however many triggers there are. Real grammy adapter and worker parts.
 */
import type { Chat } from "grammy/types";
import type { RedisClient } from "../../src/redis.js";
import { describe, expect, it } from "vitest";
import { AccessStore } from "../../src/access/store.js";
import { memoryKey } from "../../src/memory/store.js";
import { conversationKeys } from "../../src/queue/keys.js";
import type { FakeSentMessage } from "../fakes/telegram.js";
import { waitFor } from "../worker/harness.js";
import { useStack, type Stack } from "./harness.js";
import { MODEL_RETRIES } from "./scenarios-common.js";

let stack: Stack;
let redis: RedisClient;
useStack({ modelRetries: MODEL_RETRIES }, (started, connection) => {
  stack = started;
  redis = connection;
});

const sentTo = (chat: Chat): FakeSentMessage[] => stack.telegram.messagesTo(chat);

const historyOf = async (chat: Chat) =>
  (await redis.get(conversationKeys({ platform: "telegram", chatId: String(chat.id) }).history)) ?? "";
const moves = (chat: Chat) =>
  stack
    .logs()
    .filter(
      (l) =>
        l.msg === "the chat moved to a new id (group upgraded to a supergroup); its conversation data moved with it" &&
        l.from === `telegram:${chat.id}`,
    );

describe("Telegram: a group upgraded to a supergroup", () => {
  it("a call to the old id meets the 400: the answer goes to the new chat, and history, enablement, grants and reminders carry over", async () => {
    const tg = stack.telegram;
    const lin = tg.user(96001, "Lin");
    const group = tg.basicGroup(-4009601, "讀書會");
    const mention = `@${tg.bot.username}`;
    tg.sendUserMessage({ chat: group, from: lin, text: `${mention} 明天考試幾點？` });
    await tg.waitFor(() => sentTo(group)[0], 15_000, "the first answer in the basic group");
    // What the group has besides its history: enabled by an admin, a grant of Lin's there, a reminder set there.
    await redis.sadd(AccessStore.chatsKey, `telegram:${group.id}`);
    const grantKey = (chatId: number) => `grants:{telegram:${lin.id}}:telegram:${chatId}`;
    await redis.hset(
      grantKey(group.id),
      "delete_todo",
      JSON.stringify({ grantedAt: Date.now(), expiresAt: Date.now() + 3_600_000 }),
    );
    await redis.pexpire(grantKey(group.id), 3_600_000);
    const reminder = {
      id: 1,
      text: "交報告",
      at: Date.now() + 86_400_000,
      next: Date.now() + 86_400_000,
      timezone: "Asia/Taipei",
      chatId: String(group.id),
      chatKind: "group",
      userName: "Lin",
    };
    await redis.hset(`reminder:{telegram:${lin.id}}:items`, "1", JSON.stringify(reminder));
    // And an archive of what a compaction replaced (moved as it is: its entries are not read here).
    const archiveOf = (chat: Chat) => conversationKeys({ platform: "telegram", chatId: String(chat.id) }).archive;
    await redis.rpush(archiveOf(group), JSON.stringify({ archived: "an entry of the old group" }));
    const settingsOf = (chatId: number) => conversationKeys({ platform: "telegram", chatId: String(chatId) }).settings;
    await redis.set(settingsOf(group.id), JSON.stringify({ persona: "讀書會的小幫手" }));
    const groupMemory = (chatId: number) => memoryKey({ kind: "group", platform: "telegram", chatId: String(chatId) });
    await redis.set(
      groupMemory(group.id),
      JSON.stringify({ files: { "/memories/club.md": { text: "考試在週五", updatedAt: Date.now() } } }),
    );

    // The group is upgraded; the bot misses the service messages, and a message written just before is answered after.
    const supergroup = tg.upgradeGroup(group, lin, { serviceMessages: false });
    const upgradedAt = Date.now();
    tg.sendUserMessage({ chat: group, from: lin, text: `${mention} 在嗎？` });
    const answer = await tg.waitFor(() => sentTo(supergroup)[0], 15_000, "the answer in the new supergroup");
    // The group's memory moved before the answer's request was built: it reaches the model in the new chat.
    expect(answer.text).toMatch(
      /^You said: <memory scope="group">[\s\S]*考試在週五[\s\S]*<\/memory> \[Lin #\w+\] 在嗎？$/,
    );
    expect(sentTo(group)).toHaveLength(1); // nothing more reached the old id
    // One call met the 400 (the typing indicator, the first to go out); every later one went to the new id directly.
    const toOldId = tg.calls.filter((c) => c.at >= upgradedAt && String(c.payload.chat_id) === String(group.id));
    expect(toOldId).toHaveLength(1);

    await waitFor(async () => (await historyOf(supergroup)).includes("在嗎？"), 10_000, "the history to move");
    // The stores move in turn after the history: the run's closing log line says all of them did.
    await waitFor(() => moves(group).length === 1, 10_000, "the migration to finish");
    expect(await historyOf(group)).toBe("");
    expect(await historyOf(supergroup)).toContain("明天考試幾點？");
    expect(await redis.sismember(AccessStore.chatsKey, `telegram:${supergroup.id}`)).toBe(1);
    expect(await redis.exists(grantKey(group.id))).toBe(0);
    expect(Object.keys(await redis.hgetall(grantKey(supergroup.id)))).toEqual(["delete_todo"]);
    expect(await redis.pttl(grantKey(supergroup.id))).toBeGreaterThan(0);
    const moved = JSON.parse((await redis.hget(`reminder:{telegram:${lin.id}}:items`, "1"))!) as { chatId: string };
    expect(moved.chatId).toBe(String(supergroup.id));
    expect(await redis.exists(archiveOf(group))).toBe(0);
    expect(await redis.lrange(archiveOf(supergroup), 0, -1)).toEqual([
      JSON.stringify({ archived: "an entry of the old group" }),
    ]);
    expect(await redis.exists(groupMemory(group.id))).toBe(0);
    expect(await redis.exists(settingsOf(group.id))).toBe(0);
    expect(await redis.get(settingsOf(supergroup.id))).toContain("讀書會的小幫手");
    expect(await redis.get(groupMemory(supergroup.id))).toContain("考試在週五");
    await redis.del(groupMemory(supergroup.id)); // the scripted follow-up below reads the turn's first text

    // In the supergroup the conversation goes on with what was said in the group.
    tg.sendUserMessage({ chat: supergroup, from: lin, text: `${mention} and tomorrow?` });
    const next = await tg.waitFor(() => sentTo(supergroup)[1], 15_000, "the next answer");
    expect(next.text).toBe("Earlier you asked: 在嗎？");
    expect(moves(group)).toHaveLength(1);
  }, 60_000);

  it("the service messages (migrate_to_chat_id in the old group, migrate_from_chat_id in the new one) move the conversation once", async () => {
    const tg = stack.telegram;
    const wu = tg.user(96002, "Wu");
    const group = tg.basicGroup(-4009602, "登山社");
    const mention = `@${tg.bot.username}`;
    tg.sendUserMessage({ chat: group, from: wu, text: `${mention} 週末天氣好嗎？` });
    await tg.waitFor(() => sentTo(group)[0], 15_000, "the answer in the basic group");
    const supergroup = tg.upgradeGroup(group, wu);
    await waitFor(async () => (await historyOf(supergroup)).includes("週末天氣好嗎？"), 10_000, "the history to move");
    await new Promise((r) => setTimeout(r, 500)); // both service messages handled
    expect(moves(group)).toHaveLength(1);
    expect(await historyOf(group)).toBe("");
    tg.sendUserMessage({ chat: supergroup, from: wu, text: `${mention} and tomorrow?` });
    const next = await tg.waitFor(() => sentTo(supergroup)[0], 15_000, "the answer in the supergroup");
    expect(next.text).toBe("Earlier you asked: 週末天氣好嗎？");
    expect(tg.callsOf("sendMessage").filter((c) => String(c.payload.chat_id) === String(group.id))).toHaveLength(1);
  }, 60_000);
});
