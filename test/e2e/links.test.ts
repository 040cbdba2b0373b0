/**
 * Issue 26 (10) end to end: the model writes a link whose text shows another address, and a
 * Telegram proxy link. Through the real grammy and discord.js outbounds to the strict fakes:
 * Telegram's message shows the real target as the link's text (its `text_link` entity and the
 * visible text agree) and the proxy link is not clickable (no link entity); Discord's message has
 * the target written out instead of the masked link. With streaming on (the default) and off, so
 * the live text and the final text both say it. Issue 26 (6) beside it: a file name with terminal
 * escapes and bidi controls reaches neither the model's placeholder nor a log line raw.
 */
import type { Chat } from "grammy/types";
import { describe, expect, it } from "vitest";
import { text } from "../fakes/anthropic.js";
import type { FakeSentMessage } from "../fakes/telegram.js";
import { useStack, type Stack } from "./harness.js";
import { ANSWER_TIMEOUT_MS } from "./scenarios-common.js";

const MISLABELLED = "[https://bank.example/login](https://evil.example/steal)";
const PROXY = "[免費加速](tg://proxy?server=203.0.113.7&port=443&secret=ee00)";
const HONEST = "[氣象署](https://www.cwa.gov.tw/)";
const ANSWER = `請登入 ${MISLABELLED}，或用 ${PROXY}。天氣見 ${HONEST}。`;

for (const streaming of ["on", "off"] as const) {
  describe(`links the model writes, STREAMING=${streaming}`, () => {
    let stack: Stack;
    useStack({ env: { STREAMING: streaming } }, (started) => {
      stack = started;
    });

    const sentTo = (chat: Chat): FakeSentMessage[] => stack.telegram.sent.filter((m) => m.chatId === chat.id);

    it("Telegram: the link shows its real target, the proxy link is not clickable, an honest link keeps its text", async () => {
      const tg = stack.telegram;
      const user = tg.user(26101, "Lin");
      const chat = tg.privateChat(user);
      const before = sentTo(chat).length;
      stack.model.enqueue(text(ANSWER));
      tg.sendUserMessage({ chat, from: user, text: "怎麼登入？" });
      const answer = await tg.waitFor(
        () =>
          sentTo(chat)
            .slice(before)
            .find((m) => m.text.includes("氣象署")),
        ANSWER_TIMEOUT_MS,
        "the answer",
      );
      const final = answer.message.text ?? answer.text;
      expect(final).toBe("請登入 https://evil.example/steal，或用 免費加速。天氣見 氣象署。");
      const links = (answer.message.entities ?? answer.entities).filter(
        (e) => e.type === "text_link" || e.type === "url",
      );
      const shown = links.map((e) => ({
        text: final.slice(e.offset, e.offset + e.length),
        url: "url" in e ? e.url : undefined,
      }));
      expect(shown).toEqual([
        { text: "https://evil.example/steal", url: "https://evil.example/steal" },
        { text: "氣象署", url: "https://www.cwa.gov.tw/" },
      ]);
      expect(JSON.stringify(tg.sent.slice(before).map((m) => m.payload))).not.toContain("tg://proxy");
    });

    it("Discord: the masked link becomes its target written out; an honest masked link stays", async () => {
      const dc = stack.discord;
      const author = { id: "700000000000026102", username: "grace", global_name: "Grace" };
      const channelId = dc.dmChannel(author);
      const before = dc.sent.filter((m) => m.channelId === channelId).length;
      stack.model.enqueue(text(ANSWER));
      dc.sendUserMessage(author, "how do I log in?", { dm: true });
      const posted = await dc.waitFor(
        () => dc.sent.filter((m) => m.channelId === channelId)[before],
        ANSWER_TIMEOUT_MS,
        "the answer",
      );
      const expected = `請登入 https://evil.example/steal，或用 ${PROXY}。天氣見 ${HONEST}。`;
      await dc.waitFor(() => posted.message.content === expected || undefined, ANSWER_TIMEOUT_MS, "the final text");
      const bodies = [posted.payload, ...dc.edits.filter((e) => e.messageId === posted.id).map((e) => e.payload)];
      // No post or edit ever held the whole masked link (a live piece may end inside it: plain text, no link).
      for (const body of bodies) expect(String(body.content)).not.toContain(MISLABELLED);
    });
    // Issue 26 (6), once (it does not depend on streaming).
    if (streaming === "off")
      it("a file name with terminal escapes and bidi controls reaches the model's placeholder and the log lines as one plain line", async () => {
        const tg = stack.telegram;
        const user = tg.user(26103, "Kao");
        const chat = tg.privateChat(user);
        const name = "report\u001b[2J\u0007\u202Etxt.exe\u200B\n.md";
        const before = stack.model.requests.length;
        tg.sendUserMessage({
          chat,
          from: user,
          caption: "看一下",
          extra: { document: { ...tg.addFile(Buffer.from("hello")), file_name: name, mime_type: "text/markdown" } },
        });
        await tg.waitFor(() => sentTo(chat).length > 0 || undefined, ANSWER_TIMEOUT_MS, "the answer");
        const blocks = stack.model.requests.slice(before)[0]!.messages.at(-1)!.content as {
          type: string;
          text?: string;
        }[];
        expect(blocks[0]!.text!.split("\n")[0]).toBe('<file name="report [2J txt.exe .md">');
        // A file name is content: with LOG_CONTENT off (the default) no log line names it, nor carries its controls.
        expect(stack.logs().filter((l) => JSON.stringify(l).includes("report"))).toEqual([]);
        for (const line of stack.logs()) expect(JSON.stringify(line)).not.toMatch(/\\u001b|\\u0007|\u202E|\u200B/);
      });
  });
}
