/**
 * Issue 42 (Stop) end to end on Discord: the real discord.js clients (gateway, REST, interactions),
 * the adapters and the worker as two bots on one Redis, the strict fake Discord (components
 * checked as Discord does) and the fake Messages API holding its stream mid-way (injected pacing).
 */
import { describe, expect, it } from "vitest";
import { splitMessage, DISCORD_MESSAGE_LIMIT } from "../../adapters/discord/split.js";
import { text } from "../fakes/anthropic.js";
import type { FakeUser, SentMessage } from "../fakes/discord.js";
import { useStack, type Stack } from "./harness.js";

const WAIT = 20_000;

let stack: Stack;
useStack({ env: { STREAMING: "on", STREAM_EDIT_INTERVAL_MS: "200" } }, (started) => {
  stack = started;
});

let nextUser = 0;
function user(name: string): FakeUser {
  nextUser += 1;
  return { id: `71942000000000${String(nextUser).padStart(4, "0")}`, username: name.toLowerCase(), global_name: name };
}

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve = () => {};
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

const sentIn = (channelId: string): SentMessage[] => stack.discord.sent.filter((m) => m.channelId === channelId);
const contentOf = (m: SentMessage) => String(m.message.content);
/** The `custom_id`s of a message's buttons as it is now. */
const buttonsOf = (m: SentMessage) =>
  ((m.message.components ?? []) as { components: { custom_id?: string; label?: string }[] }[]).flatMap(
    (r) => r.components,
  );
const mention = () => `<@${stack.discord.bot.id}>`;

const WRITTEN = "第一段：臺北市今天晴時多雲，";
const REST = "午後有局部短暫陣雨，氣溫 22 到 28 度，出門記得帶把傘。";

describe("Stop on Discord", () => {
  it("the asker presses the Stop button mid-stream: the stream ends within 1 s and the partial answer stays, marked, without the button", async () => {
    const dc = stack.discord;
    const ann = user("Ann");
    const bob = user("Bob");
    const channelId = dc.channelId;
    const before = sentIn(channelId).length;
    const cutBefore = stack.model.cutOff.length;
    const hold = deferred();
    stack.model.enqueue({
      ...text(WRITTEN + REST),
      stream: { chunkChars: 7, holdAfterChars: [...WRITTEN].length, hold: hold.promise },
    });
    dc.sendUserMessage(ann, `${mention()} 今天天氣如何？`, { channelId });
    const live = await dc.waitFor(
      () =>
        sentIn(channelId)
          .slice(before)
          .find((m) => contentOf(m) === WRITTEN),
      WAIT,
      "the live answer",
    );
    const [button] = buttonsOf(live);
    expect(button).toMatchObject({ label: "⏹ 停止" });

    // Bob neither asked nor manages messages: refused, ephemerally.
    const refused = dc.clickButton(bob, live.id, button!.custom_id!);
    await dc.waitFor(() => refused.response, WAIT, "Bob's answer");
    expect(refused.response!.data?.content).toBe("只有提問的人或群組管理員可以停止這個回答。");
    expect(stack.model.cutOff).toHaveLength(cutBefore);

    const pressedAt = Date.now();
    const pressed = dc.clickButton(ann, live.id, button!.custom_id!);
    const cut = await dc.waitFor(() => stack.model.cutOff[cutBefore], WAIT, "the model stream closed");
    expect(cut.at - pressedAt).toBeLessThan(1000);
    await dc.waitFor(() => pressed.response, WAIT, "Ann's answer");
    expect(pressed.response!.data?.content).toBe("正在停止這個回答。");
    const [final] = splitMessage(`${WRITTEN}\n\n⏹ 已停止`, DISCORD_MESSAGE_LIMIT);
    await dc.waitFor(() => contentOf(live) === final && buttonsOf(live).length === 0, WAIT, "the stopped answer");
    hold.resolve();
  }, 60_000);

  it("/stop (slash command) stops the asker's answer; a second /stop finds nothing to stop", async () => {
    const dc = stack.discord;
    const mei = user("Mei");
    const channelId = dc.channelId;
    const before = sentIn(channelId).length;
    const cutBefore = stack.model.cutOff.length;
    const hold = deferred();
    stack.model.enqueue({ ...text(WRITTEN + REST), stream: { chunkChars: 7, holdAfterChars: 7, hold: hold.promise } });
    dc.sendUserMessage(mei, `${mention()} 今天天氣如何？`, { channelId });
    const live = await dc.waitFor(
      () =>
        sentIn(channelId)
          .slice(before)
          .find((m) => buttonsOf(m).length > 0),
      WAIT,
      "the live answer",
    );
    const sentAt = Date.now();
    const stop = dc.slashCommand(mei, "stop", { channelId });
    await dc.waitFor(() => stop.response, WAIT, "/stop's answer");
    expect(stop.response!.data?.content).toBe("正在停止這個回答。");
    const cut = await dc.waitFor(() => stack.model.cutOff[cutBefore], WAIT, "the model stream closed");
    expect(cut.at - sentAt).toBeLessThan(1000);
    await dc.waitFor(() => contentOf(live).endsWith("⏹ 已停止") && buttonsOf(live).length === 0, WAIT, "stopped");
    const again = dc.slashCommand(mei, "stop", { channelId });
    await dc.waitFor(() => again.response, WAIT, "the second /stop's answer");
    expect(again.response!.data?.content).toBe("目前沒有正在寫的回答可以停止。");
    hold.resolve();
  }, 60_000);
});
