/**
 * Issue 28 (memory) end to end on Discord: the real discord.js adapter and worker against the fake
 * Discord REST and gateway, real Redis and the strict fake Messages API, with a model scripted to
 * call the memory tool.
 *
 * A fact written in a DM reaches that person's next requests, also after /reset; never another
 * person's DM nor a server channel they speak in. A channel's memory is shared by its members and
 * never reaches their DMs; a thread is a channel of its own, with its own memory.
 */
import { describe, expect, it } from "vitest";
import { memoryKey } from "../../src/memory/store.js";
import type { RedisClient } from "../../src/redis.js";
import type { FakeRequest } from "../fakes/anthropic.js";
import type { FakeUser, SentMessage } from "../fakes/discord.js";
import { useStack, type Stack } from "./harness.js";
import { memoryBlockOf, memoryModel } from "./memory-helpers.js";
import { ANSWER_TIMEOUT_MS, requestsFor } from "./scenarios-common.js";

let stack: Stack;
let redis: RedisClient;
useStack({ model: memoryModel }, (started, connection) => {
  stack = started;
  redis = connection;
});

let nextUser = 0;
/** A fresh user for one scenario. */
function user(name: string): FakeUser {
  nextUser += 1;
  return { id: `72800000000000${String(nextUser).padStart(4, "0")}`, username: name.toLowerCase(), global_name: name };
}

/** Where a message is written: a DM with its author, or a guild channel (default the text channel). */
type Where = { dm: true } | { channelId?: string };

function channelOf(author: FakeUser, where: Where): string {
  return "dm" in where ? stack.discord.dmChannel(author) : (where.channelId ?? stack.discord.channelId);
}

const sentIn = (channelId: string): SentMessage[] => stack.discord.messagesIn(channelId);

/** `author` writes `content` (mentioning the bot in a server); resolves with the bot's next message in that channel. */
async function ask(author: FakeUser, content: string, where: Where = { dm: true }): Promise<SentMessage> {
  const dc = stack.discord;
  const channelId = channelOf(author, where);
  // Not the undo notice of a memory write in a channel where others spoke (issue 39): answers only.
  const answers = () => sentIn(channelId).filter((m) => !m.content.includes("外部內容"));
  const before = answers().length;
  dc.sendUserMessage(
    author,
    "dm" in where ? content : `<@${dc.bot.id}> ${content}`,
    "dm" in where ? { dm: true } : { channelId },
  );
  return dc.waitFor(() => answers()[before], ANSWER_TIMEOUT_MS, `an answer to "${content}"`);
}

function requestFor(marker: string): FakeRequest {
  const found = requestsFor(stack, marker);
  expect(found).toHaveLength(1);
  return found[0]!;
}

describe("Discord: personal memory", () => {
  it("a fact written in a DM is in that person's next requests, also after /reset; never in another DM or a channel", async () => {
    const dc = stack.discord;
    const alice = user("Alice");
    const bob = user("Bob");
    const saved = await ask(alice, "remember 媽媽生日三月 as family");
    expect(saved.payload.content).toMatch(/^memory: File created successfully at: \/memories\/family\.md/);
    expect(requestFor("remember 媽媽生日三月 as family").tools).toContainEqual({
      type: "memory_20250818",
      name: "memory",
    });

    const reset = dc.slashCommand(alice, "reset", { dm: true, locale: "zh-TW" });
    await dc.waitFor(() => reset.response, ANSWER_TIMEOUT_MS, "the /reset answer");
    await ask(alice, "hello A1");
    const next = requestFor("hello A1");
    expect(next.messages).toHaveLength(1);
    const block = memoryBlockOf(next)!;
    expect(block.split("\n")[0]).toBe('<memory scope="personal">');
    expect(block).toContain('<file name="/memories/family.md">\n媽媽生日三月\n</file>');

    await ask(bob, "hello B1");
    expect(JSON.stringify(requestFor("hello B1").messages)).not.toContain("媽媽生日三月");
    await ask(alice, "hello C1", {});
    expect(JSON.stringify(requestFor("hello C1").messages)).not.toContain("媽媽生日三月");
    expect(await redis.get(memoryKey({ kind: "personal", platform: "discord", userId: alice.id }))).toContain(
      "媽媽生日三月",
    );
  });
});

describe("Discord: channel memory", () => {
  it("is shared by the channel's members, not seen in their DMs, and a thread has its own", async () => {
    const dc = stack.discord;
    const dan = user("Dan");
    const eve = user("Eve");
    await ask(dan, "remember 週五聚餐 as plan", {});
    await ask(eve, "hello E1", {});
    const shared = memoryBlockOf(requestFor("hello E1"))!;
    expect(shared.split("\n")[0]).toBe('<memory scope="group">');
    expect(shared).toContain("週五聚餐");

    await ask(eve, "hello E2");
    expect(JSON.stringify(requestFor("hello E2").messages)).not.toContain("週五聚餐");
    await ask(eve, "hello E3", { channelId: dc.threadId });
    expect(memoryBlockOf(requestFor("hello E3"))).toBeUndefined();
    expect(await redis.get(memoryKey({ kind: "group", platform: "discord", chatId: dc.channelId }))).toContain(
      "週五聚餐",
    );
  });
});
