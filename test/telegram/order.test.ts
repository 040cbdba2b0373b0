/**
 * The order of Telegram updates (`adapters/telegram/updates.ts`) with the real grammy adapter
 * against the fake Bot API: a command runs detached on its conversation's chain (other chats and
 * other topics go on; the same conversation's next message waits for it), a plain message with
 * nothing in flight is handled and awaited as before (the next update waits until it is queued),
 * and `stop()` waits for detached work. The command and the queueing are held by the test
 * (injected pacing); the only clock is a short look for something that must not have happened.
 */
import { afterEach, describe, expect, it } from "vitest";
import type { CommandInvocation } from "../../src/commands/command.js";
import type { IncomingMessage } from "../../src/queue/incoming.js";
import { startHarness, type Harness } from "./harness.js";

const WAIT = 5000;
/** How long the test looks for something that must not happen (it would happen within a few ms). */
const LOOK_MS = 300;

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve = () => {};
  const promise = new Promise<void>((r) => (resolve = r));
  const gate = { promise, resolve: () => resolve() };
  gates.push(gate);
  return gate;
}

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

let h: Harness | undefined;
/** Every gate a test made: opened after it, so a failed test leaves nothing held. */
const gates: { resolve: () => void }[] = [];
afterEach(async () => {
  for (const gate of gates.splice(0)) gate.resolve();
  await h?.stop();
  h = undefined;
});

/** Holds `/help` until the returned gate opens; `started` lists the commands as they begin. */
function holdHelp(harness: Harness): { gate: ReturnType<typeof deferred>; started: CommandInvocation[] } {
  const gate = deferred();
  const started: CommandInvocation[] = [];
  const runner = harness.context.commands;
  const runReply = runner.runReply.bind(runner);
  runner.runReply = async (invocation) => {
    started.push(invocation);
    if (invocation.name === "help") await gate.promise;
    return runReply(invocation);
  };
  return { gate, started };
}

/** Records, for each queued message, how many messages the bot had sent to its chat by then. */
function watchQueue(harness: Harness): { text: string; sentBefore: number }[] {
  const seen: { text: string; sentBefore: number }[] = [];
  const enqueue = harness.context.enqueue;
  harness.context.enqueue = async (message: IncomingMessage) => {
    seen.push({
      text: message.text,
      sentBefore: harness.tg.sent.filter((m) => String(m.chatId) === message.chatId).length,
    });
    return enqueue(message);
  };
  return seen;
}

describe("Telegram update order", () => {
  it("a command runs detached: another chat's message is queued meanwhile, the same chat's next message after the command's reply", async () => {
    h = await startHarness();
    const { tg } = h;
    const { gate, started } = holdHelp(h);
    const seen = watchQueue(h);
    const ann = tg.dm(81001, "Ann");
    const ben = tg.dm(81002, "Ben");
    tg.sendUserMessage({ chat: ann.chat, from: ann.user, text: "/help" });
    await tg.waitFor(() => started.some((c) => c.name === "help"), WAIT, "/help running");
    tg.sendUserMessage({ chat: ann.chat, from: ann.user, text: "after help" });
    tg.sendUserMessage({ chat: ben.chat, from: ben.user, text: "Ben meanwhile" });
    await tg.waitFor(() => h!.queued.find((m) => m.text === "Ben meanwhile"), WAIT, "Ben's message queued");
    expect(h.queued.map((m) => m.text)).toEqual(["Ben meanwhile"]);
    expect(tg.messagesTo(ann.chat)).toEqual([]);

    gate.resolve();
    await tg.waitFor(() => h!.queued.find((m) => m.text === "after help"), WAIT, "Ann's message queued");
    // Ann's message was queued after /help was answered.
    expect(seen.find((s) => s.text === "after help")!.sentBefore).toBe(1);
    expect(tg.messagesTo(ann.chat)[0]!.text).toContain("/help");
  });

  it("topics are conversations of their own: a command held in one topic holds no other topic of the group", async () => {
    h = await startHarness();
    const { tg } = h;
    const { gate, started } = holdHelp(h);
    const forum = tg.group(-1008100100, "Forum", true);
    const cat = tg.user(81003, "Cat");
    tg.sendUserMessage({ chat: forum, from: cat, text: `/help@${tg.bot.username}`, message_thread_id: 11 });
    await tg.waitFor(() => started.some((c) => c.name === "help"), WAIT, "/help running");
    tg.sendUserMessage({ chat: forum, from: cat, text: `@${tg.bot.username} topic 11 next`, message_thread_id: 11 });
    tg.sendUserMessage({
      chat: forum,
      from: cat,
      text: `@${tg.bot.username} topic 12 meanwhile`,
      message_thread_id: 12,
    });
    await tg.waitFor(() => h!.queued.find((m) => m.text === "topic 12 meanwhile"), WAIT, "topic 12's message queued");
    expect(h.queued.map((m) => m.text)).toEqual(["topic 12 meanwhile"]);
    gate.resolve();
    await tg.waitFor(() => h!.queued.find((m) => m.text === "topic 11 next"), WAIT, "topic 11's message queued");
  });

  it("a plain message with nothing in flight is awaited as before: the next update, of any chat, waits until it is queued", async () => {
    h = await startHarness();
    const { tg } = h;
    const held = deferred();
    const enqueue = h.context.enqueue;
    const began: string[] = [];
    h.context.enqueue = async (message: IncomingMessage) => {
      began.push(message.text);
      if (message.text === "first") await held.promise;
      return enqueue(message);
    };
    const ann = tg.dm(81004, "Ann");
    const ben = tg.dm(81005, "Ben");
    tg.sendUserMessage({ chat: ann.chat, from: ann.user, text: "first" });
    await tg.waitFor(() => began.includes("first"), WAIT, "the first message being queued");
    tg.sendUserMessage({ chat: ben.chat, from: ben.user, text: "second" });
    await pause(LOOK_MS);
    expect(began).toEqual(["first"]);
    held.resolve();
    await tg.waitFor(() => h!.queued.length === 2, WAIT, "both messages queued");
    expect(h.queued.map((m) => m.text)).toEqual(["first", "second"]);
  });

  it("stop() waits for a command still running detached, and its reply is sent", async () => {
    h = await startHarness();
    const { tg, adapter } = h;
    const { gate, started } = holdHelp(h);
    const ann = tg.dm(81006, "Ann");
    tg.sendUserMessage({ chat: ann.chat, from: ann.user, text: "/help" });
    await tg.waitFor(() => started.some((c) => c.name === "help"), WAIT, "/help running");
    let stopped = false;
    const stopping = adapter.stop().then(() => (stopped = true));
    await tg.waitFor(() => !adapter.bot.isRunning(), WAIT, "polling stopped");
    await pause(LOOK_MS);
    expect(stopped).toBe(false);
    gate.resolve();
    await stopping;
    expect(tg.messagesTo(ann.chat)).toHaveLength(1);
  });
});
