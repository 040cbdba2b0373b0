/**
 * A slow command holds no other chat on Telegram: grammY's long polling handles updates one after
 * another, and `/compact` waits (up to 90 s) for a worker to summarise the conversation. The real
 * grammy adapter, queue, worker and `compactions` queue on a real Redis, the strict fake Bot API,
 * and the fake Messages API holding the compaction's summary until the test lets it go (injected
 * pacing: `holdAfterChars` + `hold`, no clock).
 *
 * While a group admin's `/compact` runs: another chat's message is answered, another chat's button
 * press is answered, and the Stop button and `/stop` in the compacting group itself act at once;
 * the group's own next message waits for `/compact` (a person's messages are handled in the order
 * sent) and is answered with the new summary.
 */
import type { Chat } from "grammy/types";
import { describe, expect, it } from "vitest";
import { SUMMARY_OPEN } from "../../src/history/summary.js";
import { text, type FakeMessageReply, type FakeRequest } from "../fakes/anthropic.js";
import type { FakeSentMessage } from "../fakes/telegram.js";
import { useStack, type Stack } from "./harness.js";
import { lastUserTyped } from "./scripted-model.js";

/** How long something that must not wait for the compaction may take (far below its 90 s). */
const PROMPTLY = 8000;
/** How long an answer of the worker may take. */
const WAIT = 20_000;

function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve = () => {};
  const promise = new Promise<void>((r) => (resolve = r));
  return { promise, resolve };
}

/** The compaction's summary: streamed once the test resolves this. */
let summaryHold = deferred();

/** A compaction request: no tools offered, the compaction prompt as system. */
function isCompaction(request: FakeRequest): boolean {
  const system = Array.isArray(request.system)
    ? request.system.map((s) => s.text).join("")
    : String(request.system ?? "");
  return request.tools === undefined && system.startsWith("You write the summary");
}

function model(request: FakeRequest): FakeMessageReply {
  if (isCompaction(request))
    return { ...text("SUMMARY[slow-cmd]"), stream: { holdAfterChars: 0, hold: summaryHold.promise } };
  return text(`You said: ${(lastUserTyped(request) ?? "").replace(/^\[[^\]]{1,80}\]\s*/, "").trim()}`);
}

let stack: Stack;
useStack(
  { model, env: { STREAMING: "on", STREAM_EDIT_INTERVAL_MS: "200", COMPACT_KEEP_TURNS: "1" } },
  (started) => (stack = started),
);

const sentTo = (chat: Chat): FakeSentMessage[] => stack.telegram.messagesTo(chat);
/** The model's chat requests (not compactions) whose last user text contains `needle`. */
const requestsFor = (needle: string) =>
  stack.model.requests.filter((r) => !isCompaction(r) && (lastUserTyped(r) ?? "").includes(needle));

describe("a slow command on Telegram", () => {
  it("while a group's /compact runs, other chats' messages and presses and the group's Stop are answered; the group's next message waits for it", async () => {
    const tg = stack.telegram;
    const group = tg.group(-1009430001, "壓縮群組");
    const ann = tg.user(94301, "Ann");
    const admin = tg.user(94302, "Admin");
    tg.admins.set(group.id, new Set([admin.id]));
    const bob = tg.dm(94303, "Bob");
    const carol = tg.dm(94304, "Carol");
    summaryHold = deferred();
    const answerHold = deferred();
    try {
      // The group's conversation: two exchanges, so /compact has a turn to summarise (one is kept).
      for (const n of [1, 2]) {
        tg.sendUserMessage({ chat: group, from: ann, text: `@${tg.bot.username} slow-cmd fact ${n}` });
        await tg.waitFor(
          () => sentTo(group).find((m) => m.text === `You said: slow-cmd fact ${n}`),
          WAIT,
          `the answer to fact ${n}`,
        );
      }
      // Carol's settings, with buttons to press later.
      const listing = await tg.ask({ chat: carol.chat, from: carol.user, text: "/settings" }, WAIT);
      expect(tg.buttons(listing.answer).length).toBeGreaterThan(0);

      // Ann's next answer is being written (held mid-stream): its live message carries the Stop button.
      stack.model.enqueue({
        ...text("第一段：這個回答寫得很慢，還沒寫完。"),
        stream: { chunkChars: 4, holdAfterChars: 4, hold: answerHold.promise },
      });
      // Only a message sent for this answer: an earlier answer's live message may still show its Stop button a moment.
      const sentBefore = sentTo(group).length;
      tg.sendUserMessage({ chat: group, from: ann, text: `@${tg.bot.username} 慢慢說` });
      const live = await tg.waitFor(
        () =>
          sentTo(group)
            .slice(sentBefore)
            .find((m) => tg.buttons(m).some((b) => b.callback_data?.startsWith("sp:"))),
        WAIT,
        "the live answer with its Stop button",
      );

      // The admin compacts now; the summary's model call is held.
      tg.sendUserMessage({ chat: group, from: admin, text: `/compact@${tg.bot.username}` });
      await tg.waitFor(() => stack.model.requests.some(isCompaction), WAIT, "the compaction's model call");
      // …and Ann writes again in the group: this waits for /compact.
      tg.sendUserMessage({ chat: group, from: ann, text: `@${tg.bot.username} slow-cmd after` });

      // Another chat's message is answered meanwhile.
      const bobs = await tg.ask({ chat: bob.chat, from: bob.user, text: "slow-cmd hello from Bob" }, PROMPTLY);
      expect(bobs.answer.text).toBe("You said: slow-cmd hello from Bob");

      // Another chat's button press is answered meanwhile.
      const data = tg.buttons(listing.answer)[0]!.callback_data!;
      expect(await tg.toast(tg.pressButton({ from: carol.user, message: listing.answer, data }), PROMPTLY)).not.toBe(
        "",
      );

      // Stop in the compacting group acts at once: the press is answered and the model stream closed.
      const cutBefore = stack.model.cutOff.length;
      const stopData = tg.buttons(live).find((b) => b.callback_data?.startsWith("sp:"))!.callback_data!;
      const pressed = tg.pressButton({ from: ann, message: live, data: stopData });
      expect(await tg.toast(pressed, PROMPTLY)).toBe("正在停止這個回答。");
      await tg.waitFor(() => stack.model.cutOff[cutBefore], PROMPTLY, "the answer's model stream closed by the stop");
      // So does /stop (nothing is being written any more, or it is stopping already).
      const stopCommand = tg.sendUserMessage({ chat: group, from: ann, text: `/stop@${tg.bot.username}` });
      await tg.waitFor(
        () =>
          sentTo(group).find(
            (m) =>
              (m.payload.reply_parameters as { message_id?: number } | undefined)?.message_id ===
              stopCommand.message_id,
          ),
        PROMPTLY,
        "/stop's answer",
      );

      // The compaction is still held: /compact has not answered, and Ann's later message was not taken yet.
      expect(sentTo(group).some((m) => m.text.includes("已壓縮對話"))).toBe(false);
      expect(requestsFor("slow-cmd after")).toEqual([]);

      summaryHold.resolve();
      const compacted = await tg.waitFor(
        () => sentTo(group).find((m) => m.text.includes("已壓縮對話")),
        WAIT,
        "/compact's answer",
      );
      expect(compacted.text).toContain("SUMMARY[slow-cmd]");
      const after = await tg.waitFor(
        () => sentTo(group).find((m) => m.text === "You said: slow-cmd after"),
        WAIT,
        "the answer to Ann's later message",
      );
      // In the order sent: /compact's answer first, and the later message's request carries the new summary.
      expect(sentTo(group).indexOf(compacted)).toBeLessThan(sentTo(group).indexOf(after));
      expect(JSON.stringify(requestsFor("slow-cmd after")[0]!.messages[0])).toContain(SUMMARY_OPEN);
    } finally {
      summaryHold.resolve();
      answerHold.resolve();
    }
  }, 60_000);
});
