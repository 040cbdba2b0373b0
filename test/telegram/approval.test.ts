import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { approvalMessages } from "../../adapters/line/messages.js";
import { approvalPromptHtml, callbackData } from "../../adapters/telegram/approval.js";
import { testConfig } from "../helpers/config.js";
import { parseApprovalButton } from "../../src/buttons.js";
import type { IncomingMessage } from "../../src/queue/incoming.js";
import { startHarness, type Harness } from "./harness.js";
import { destinationOf } from "../../src/outbound.js";

let h: Harness;
beforeAll(async () => {
  h = await startHarness({ TIMEZONE: "Asia/Taipei" });
});
afterAll(async () => {
  await h.stop();
});

const GROUP = -100321;
function requestFrom(userId: number, name: string): IncomingMessage {
  return {
    platform: "telegram",
    chatId: String(GROUP),
    chatKind: "group",
    userId: String(userId),
    userName: name,
    text: "刪掉 3",
    messageId: "400",
    sentAt: Date.now(),
    reply: {},
  };
}

async function prompt(approvalId: string) {
  h.decider.approvals.set(approvalId, { requesterId: "31", requesterName: "Alice" });
  const expiresAt = Date.parse("2026-01-01T04:05:00Z");
  const ref = await h.adapter.outbound.sendApprovalPrompt(destinationOf(requestFrom(31, "Alice")), {
    approvalId,
    action: "刪除待辦 #3「買牛奶 <2 瓶> & 蛋」",
    requesterName: "Alice",
    expiresAt,
  });
  const sent = h.tg.sent.find((s) => String(s.messageId) === ref.messageId)!;
  return { ref, sent };
}

const answerOf = (queryId: string) =>
  h.tg.waitFor(() => h.tg.callbackAnswers.find((a) => a.callback_query_id === queryId), 5000, `answer to ${queryId}`);

describe("telegram approval prompts", () => {
  it("encodes the choice in at most 64 bytes and refuses ids that would not fit", () => {
    const id = "A".repeat(59);
    expect(Buffer.byteLength(callbackData(id, true))).toBe(64);
    expect(parseApprovalButton(callbackData("k3Jx_9", false))).toEqual({
      approvalId: "k3Jx_9",
      approve: false,
      always: false,
    });
    expect(parseApprovalButton(callbackData("k3Jx_9", "always"))).toEqual({
      approvalId: "k3Jx_9",
      approve: true,
      always: true,
    });
    expect(Buffer.byteLength(callbackData(id, "always"))).toBe(64);
    expect(() => callbackData("A".repeat(60), true)).toThrow(/1-59 characters/);
    expect(parseApprovalButton("ap:x:maybe")).toBeUndefined();
  });

  it("round trip: the requester confirms once; another user's press and a second press change nothing", async () => {
    const { ref, sent } = await prompt("apr1");
    expect(sent.text).toContain("刪除待辦 #3「買牛奶 <2 瓶> & 蛋」");
    expect(sent.text).toContain("只有 Alice 可以決定，12:05 前有效");
    expect(sent.payload.reply_parameters).toEqual({ message_id: 400, allow_sending_without_reply: true });
    expect(h.tg.buttons(sent)).toEqual([
      { text: "✅ 確認", callback_data: "ap:apr1:y" },
      { text: "❌ 取消", callback_data: "ap:apr1:n" },
    ]);

    const bob = h.tg.user(32, "Bob");
    const foreign = h.tg.pressButton({ from: bob, message: sent, data: "ap:apr1:y" });
    expect((await answerOf(foreign)).text).toBe("只有 Alice 可以決定。");
    expect(h.decider.accepted).toHaveLength(0);
    expect(h.tg.buttons(sent)).toHaveLength(2);

    const alice = h.tg.user(31, "Alice");
    const first = h.tg.pressButton({ from: alice, message: sent, data: "ap:apr1:y" });
    expect((await answerOf(first)).text).toBe("已確認，處理中…");
    await h.tg.waitFor(() => h.tg.buttons(sent).length === 0, 5000, "keyboard removed");
    const second = h.tg.pressButton({ from: alice, message: sent, data: "ap:apr1:n" });
    expect((await answerOf(second)).text).toBe("這個請求已經處理過了。");
    expect(h.decider.accepted).toEqual([{ approvalId: "apr1", platform: "telegram", deciderId: "31", approve: true }]);

    await h.adapter.outbound.closeApprovalPrompt(ref, "approved", "已刪除待辦 #3「買牛奶」");
    expect(sent.text).toBe("✅ 已刪除待辦 #3「買牛奶」");
    expect(sent.message.reply_markup).toBeUndefined();
    // Editing again to the same text is "message is not modified": not a failure.
    await expect(
      h.adapter.outbound.closeApprovalPrompt(ref, "approved", "已刪除待辦 #3「買牛奶」"),
    ).resolves.toBeUndefined();
    expect(h.tg.calls.filter((c) => c.method === "editMessageText")).toHaveLength(2);
  });

  it("an anonymous admin's request may be decided by any admin of the group, and by nobody else", async () => {
    h.decider.approvals.set("apr9", { requesterId: `chat:${GROUP}`, requesterName: "Group" });
    const anonymous = { ...requestFrom(0, "Group"), userId: `chat:${GROUP}` };
    const ref = await h.adapter.outbound.sendApprovalPrompt(destinationOf(anonymous), {
      approvalId: "apr9",
      action: "刪除待辦 #1",
      requesterName: "Group",
      expiresAt: Date.now() + 60_000,
    });
    const sent = h.tg.sent.find((s) => String(s.messageId) === ref.messageId)!;
    h.tg.admins.set(GROUP, new Set([41]));
    const member = h.tg.pressButton({ from: h.tg.user(42, "Member"), message: sent, data: "ap:apr9:y" });
    expect((await answerOf(member)).text).toBe("只有 Group 可以決定。");
    const admin = h.tg.pressButton({ from: h.tg.user(41, "Admin"), message: sent, data: "ap:apr9:y" });
    expect((await answerOf(admin)).text).toBe("已確認，處理中…");
    expect(h.decider.accepted.at(-1)).toEqual({
      approvalId: "apr9",
      platform: "telegram",
      deciderId: `chat:${GROUP}`,
      approve: true,
    });
    // An admin is not the requester of someone else's request.
    const { sent: alices } = await prompt("apr10");
    const adminOnAlice = h.tg.pressButton({ from: h.tg.user(41, "Admin"), message: alices, data: "ap:apr10:y" });
    expect((await answerOf(adminOnAlice)).text).toBe("只有 Alice 可以決定。");
  });

  it("a decline, an expired prompt, and a press on unknown data", async () => {
    const { ref, sent } = await prompt("apr2");
    const alice = h.tg.user(31, "Alice");
    const q = h.tg.pressButton({ from: alice, message: sent, data: "ap:apr2:n" });
    expect((await answerOf(q)).text).toBe("已取消。");
    expect(h.decider.accepted.at(-1)).toMatchObject({ approvalId: "apr2", approve: false });
    await h.adapter.outbound.closeApprovalPrompt(ref, "declined", "已取消，沒有刪除任何東西。");
    expect(sent.text).toBe("❌ 已取消，沒有刪除任何東西。");

    const expired = await prompt("apr3");
    h.decider.approvals.delete("apr3");
    const q2 = h.tg.pressButton({ from: alice, message: expired.sent, data: "ap:apr3:y" });
    expect((await answerOf(q2)).text).toBe("這個確認請求已過期或不存在。");
    expect(h.tg.buttons(expired.sent)).toHaveLength(2);
    await h.adapter.outbound.closeApprovalPrompt(expired.ref, "expired", "確認請求已過期。");
    expect(expired.sent.text).toBe("⌛ 確認請求已過期。");

    const q3 = h.tg.pressButton({ from: alice, message: expired.sent, data: "something-else" });
    expect((await answerOf(q3)).text).toBe("這個按鈕已失效。");
  });

  it("treats a late press (query is too old) as harmless: the decision still counts and the keyboard goes", async () => {
    const { sent } = await prompt("apr5");
    h.tg.failNext("answerCallbackQuery", {
      error_code: 400,
      description: "Bad Request: query is too old and response timeout expired or query ID is invalid",
    });
    h.tg.pressButton({ from: h.tg.user(31, "Alice"), message: sent, data: "ap:apr5:y" });
    await h.tg.waitFor(() => h.tg.buttons(sent).length === 0, 5000, "keyboard removed");
    expect(h.decider.accepted.at(-1)).toMatchObject({ approvalId: "apr5", approve: true });
  });

  it("tells the presser to try again when the decision cannot be recorded", async () => {
    const { sent } = await prompt("apr4");
    h.decider.failing = true;
    try {
      const q = h.tg.pressButton({ from: h.tg.user(31, "Alice"), message: sent, data: "ap:apr4:y" });
      expect((await answerOf(q)).text).toBe("暫時無法處理，請稍後再按一次。");
      expect(h.tg.buttons(sent)).toHaveLength(2);
      expect(h.decider.approvals.get("apr4")?.decided).toBeUndefined();
    } finally {
      h.decider.failing = false;
    }
  });
});

describe("the prompt's expiry time", () => {
  // 16:02 UTC is 00:02 in Taipei: `hour12: false` printed zh-TW "24:02" there.
  const prompt = (locale: "zh-TW" | "en") => ({
    approvalId: "t1",
    action: "刪除待辦 #1「買牛奶」",
    requesterName: "Alice",
    expiresAt: Date.parse("2026-12-07T16:02:00Z"),
    locale,
  });
  const config = testConfig({ TIMEZONE: "Asia/Taipei" });
  it("is 00:02 after midnight on Telegram and LINE, in zh-TW and English", () => {
    const now = Date.parse("2026-12-07T15:57:00Z");
    expect(approvalPromptHtml(prompt("zh-TW"), config, now)).toContain(
      "只有 Alice 可以決定，00:02 前有效（約 5 分鐘）。",
    );
    expect(approvalPromptHtml(prompt("en"), config, now)).toContain("until 00:02 (about 5 min)");
    for (const locale of ["zh-TW", "en"] as const) {
      const shown = JSON.stringify(approvalMessages(prompt(locale), locale, "Asia/Taipei"));
      expect(shown).toContain("00:02");
      expect(shown).not.toContain("24:02");
    }
  });
});
