import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Message, UserFromGetMe } from "grammy/types";
import { classifyMessage } from "../../adapters/telegram/inbound.js";
import { unknownCommand } from "../../src/commands/runner.js";
import { conversationKey, type IncomingMessage } from "../../src/queue/incoming.js";
import { FakeTelegram } from "../fakes/telegram.js";
import { featureCommandNames, KNOWN_FEATURE_COMMANDS } from "../helpers/commands.js";
import { startHarness, type Harness } from "./harness.js";

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h.stop();
});

const alice = () => h.tg.user(11, "Alice", { last_name: "Lin" });
const bob = () => h.tg.user(12, "Bob");
const group = () => h.tg.group(-1001234, "Family");

/** Sends a private sentinel and waits for it: everything injected before it has been handled. */
async function settle(): Promise<void> {
  const me = h.tg.user(99, "Sentinel");
  const text = `sentinel ${Math.random()}`;
  h.tg.sendUserMessage({ chat: h.tg.privateChat(me), from: me, text });
  await h.tg.waitFor(() => h.queued.find((m) => m.text === text), 5000, "sentinel");
}

async function queuedFor(messageId: number): Promise<IncomingMessage> {
  return h.tg.waitFor(() => h.queued.find((m) => m.messageId === String(messageId)), 5000, `message ${messageId}`);
}

describe("telegram inbound", () => {
  it("registers the command menu at start-up", () => {
    const menu = h.tg.commands.get("") as { commands: { command: string; description: string }[] };
    // The core's commands around every feature's for everyone (FEATURES' order), the known features' among them.
    const features = featureCommandNames("telegram", false);
    expect(features.filter((n) => (KNOWN_FEATURE_COMMANDS as readonly string[]).includes(n))).toEqual(
      KNOWN_FEATURE_COMMANDS,
    );
    expect(menu.commands.map((c) => c.command)).toEqual(["start", "help", "tools", "reset", ...features, "usage"]);
    expect(menu.commands[2]!.description).toContain("工具");
    expect((h.tg.commands.get("en") as { commands: { description: string }[] }).commands[0]!.description).toBe(
      "Get started, with examples",
    );
    expect(h.tg.callsOf("deleteWebhook")).toHaveLength(1);
  });

  it("queues a private message with the sender's details", async () => {
    const m = h.tg.sendUserMessage({ chat: h.tg.privateChat(alice()), from: alice(), text: "台北明天會下雨嗎？" });
    const q = await queuedFor(m.message_id);
    expect(q).toMatchObject({
      platform: "telegram",
      chatId: "11",
      chatKind: "dm",
      userId: "11",
      userName: "Alice Lin",
      text: "台北明天會下雨嗎？",
      reply: {},
      locale: "zh-hant",
    });
    expect(q.sentAt).toBe(m.date * 1000);
  });

  it("ignores a group message without a mention, and strips the mention when there is one", async () => {
    const plain = h.tg.sendUserMessage({ chat: group(), from: bob(), text: "anyone up for lunch?" });
    const m = h.tg.sendUserMessage({ chat: group(), from: bob(), text: "@Taiwan_Test_Bot 現在幾點？" });
    const q = await queuedFor(m.message_id);
    expect(q).toMatchObject({
      chatId: "-1001234",
      chatKind: "group",
      userId: "12",
      userName: "Bob",
      text: "現在幾點？",
    });
    expect(h.queued.some((x) => x.messageId === String(plain.message_id))).toBe(false);
    const mid = h.tg.sendUserMessage({ chat: group(), from: bob(), text: "hey @taiwan_test_bot what is 2+2" });
    expect((await queuedFor(mid.message_id)).text).toBe("hey what is 2+2");
  });

  it("takes a reply to one of the bot's messages in a group, and a text_mention of the bot", async () => {
    const botMessage = await h.adapter.outbound.sendMarkdown({ chatId: "-1001234" }, "我是機器人");
    const reply = h.tg.sendUserMessage({
      chat: group(),
      from: bob(),
      text: "謝謝，那後天呢？",
      reply_to_message: Number(botMessage[0]!.messageId),
    });
    expect((await queuedFor(reply.message_id)).text).toBe("謝謝，那後天呢？");
    const tm = h.tg.sendUserMessage({
      chat: group(),
      from: bob(),
      text: "Taiwan Bot 翻譯 hello",
      entities: [{ type: "text_mention", offset: 0, length: 10, user: h.tg.bot }],
    });
    expect((await queuedFor(tm.message_id)).text).toBe("翻譯 hello");
  });

  it("ignores replies to other people, other bots, the bot itself, service messages and edits", async () => {
    const other = h.tg.sendUserMessage({ chat: group(), from: alice(), text: "hello" });
    const replyToAlice = h.tg.sendUserMessage({
      chat: group(),
      from: bob(),
      text: "hi Alice",
      reply_to_message: other,
    });
    const fromBot = h.tg.sendUserMessage({
      chat: h.tg.privateChat(alice()),
      from: h.tg.user(555, "Other", { is_bot: true }),
      text: "beep",
    });
    const service = h.tg.sendUserMessage({ chat: group(), from: alice(), extra: { new_chat_members: [bob()] } });
    const original = h.tg.sendUserMessage({ chat: h.tg.privateChat(alice()), from: alice(), text: "first version" });
    await queuedFor(original.message_id);
    h.tg.editUserMessage(original, "second version");
    const forOther = h.tg.sendUserMessage({ chat: group(), from: bob(), text: "/tools@some_other_bot" });
    await settle();
    const ids = [other, replyToAlice, fromBot, service, forOther].map((m) => String(m.message_id));
    expect(h.queued.filter((m) => ids.includes(m.messageId))).toEqual([]);
    expect(h.queued.filter((m) => m.messageId === String(original.message_id))).toHaveLength(1);
    expect(h.queued.some((m) => m.text === "second version")).toBe(false);
    expect(
      h.tg.sent.some(
        (s) =>
          s.chatId === -1001234 &&
          s.payload.reply_parameters &&
          (s.payload.reply_parameters as { message_id: number }).message_id === forOther.message_id,
      ),
    ).toBe(false);
    // edited_message is not even requested from Telegram
    expect(h.tg.callsOf("getUpdates")[0]!.payload.allowed_updates).toEqual(["message", "callback_query"]);
  });

  it("answers a bare or @bot command that is not ours with the /help list, never queued; hints at a bare mention", async () => {
    const replyTo = (m: { message_id: number }) =>
      h.tg.waitFor(() =>
        h.tg.sent.find((s) => (s.payload.reply_parameters as { message_id?: number })?.message_id === m.message_id),
      );
    const expected = unknownCommand("zh-TW", "weather", "telegram", false);
    const bare = h.tg.sendUserMessage({ chat: group(), from: bob(), text: "/weather 台北" });
    expect((await replyTo(bare)).text).toBe(expected);
    const at = h.tg.sendUserMessage({ chat: group(), from: bob(), text: "/weather@taiwan_test_bot 高雄" });
    expect((await replyTo(at)).text).toBe(expected);
    // Only command-shaped words: "/usr/bin/x" and "/ 2" are messages (in a private chat, where every message is).
    const path = h.tg.sendUserMessage({ chat: h.tg.privateChat(bob()), from: bob(), text: "/usr/bin/x" });
    expect((await queuedFor(path.message_id)).text).toBe("/usr/bin/x");
    const slash = h.tg.sendUserMessage({ chat: h.tg.privateChat(bob()), from: bob(), text: "/ 2" });
    expect((await queuedFor(slash.message_id)).text).toBe("/ 2");
    expect(h.queued.some((q) => [bare, at].some((x) => q.messageId === String(x.message_id)))).toBe(false);
    const only = h.tg.sendUserMessage({ chat: group(), from: bob(), text: "@taiwan_test_bot" });
    const hint = await replyTo(only);
    expect(hint.text).toBe("有什麼需要幫忙的嗎？請把問題寫在同一則訊息裡。");
  });

  it("classifies a bot_command entity at the start as a command only when it ends its word", () => {
    const me = { id: 1, is_bot: true, first_name: "Bot", username: "taiwan_test_bot" } as UserFromGetMe;
    const message = (text: string, length: number) =>
      ({
        message_id: 1,
        date: 0,
        chat: { id: 5, type: "private", first_name: "A" },
        from: { id: 2, is_bot: false, first_name: "A" },
        text,
        entities: [{ type: "bot_command", offset: 0, length }],
      }) as Message;
    expect(classifyMessage(message("/frobnicate x", 11), me)).toMatchObject({
      kind: "command",
      command: "frobnicate",
      args: "x",
    });
    expect(classifyMessage(message("/usr/bin/x", 4), me)).toMatchObject({ kind: "enqueue" });
    expect(classifyMessage(message("/frobnicate@other_bot", 21), me)).toMatchObject({ kind: "ignore" });
  });

  it("attributes anonymous admin messages to the sending chat", async () => {
    const m = h.tg.sendUserMessage({ chat: group(), sender_chat: group(), text: "@taiwan_test_bot 新增待辦：開會" });
    const q = await queuedFor(m.message_id);
    expect(q).toMatchObject({ userId: "chat:-1001234", userName: "Family", text: "新增待辦：開會" });
    const channel = { id: -1009999, type: "channel", title: "News" } as const;
    const c = h.tg.sendUserMessage({ chat: group(), sender_chat: channel as never, text: "@taiwan_test_bot hi" });
    expect(await queuedFor(c.message_id)).toMatchObject({ userId: "chat:-1009999", userName: "News" });
  });

  it("makes a forum topic its own conversation and keeps it for the answer", async () => {
    const forum = h.tg.group(-100777, "Forum", true);
    const m = h.tg.sendUserMessage({ chat: forum, from: bob(), text: "@taiwan_test_bot hi", message_thread_id: 42 });
    const q = await queuedFor(m.message_id);
    expect(q.reply).toEqual({ threadId: "42" });
    expect(q.topicId).toBe("42");
    expect(conversationKey(q)).toBe("telegram:-100777/42");
  });

  it("a message in a topic the bot created is not a reply to the bot", async () => {
    const forum = h.tg.group(-100778, "Forum", true);
    const topic = h.tg.createTopic(forum, "Bot's topic", undefined, h.tg.bot);
    const plain = h.tg.sendUserMessage({ chat: forum, from: bob(), text: "just chatting", message_thread_id: topic });
    expect(plain.reply_to_message?.from?.id).toBe(h.tg.bot.id); // as on Telegram: the topic's creation message
    const addressed = h.tg.sendUserMessage({
      chat: forum,
      from: bob(),
      text: "@taiwan_test_bot 幾點了",
      message_thread_id: topic,
    });
    expect(await queuedFor(addressed.message_id)).toMatchObject({ topicId: String(topic), text: "幾點了" });
    expect(h.queued.some((x) => x.messageId === String(plain.message_id))).toBe(false);
  });

  it("a reply thread of an ordinary group is not a topic: the chat stays one conversation", async () => {
    const m = h.tg.sendUserMessage({ chat: group(), from: bob(), text: "@taiwan_test_bot first" });
    const reply = h.tg.sendUserMessage({
      chat: group(),
      from: alice(),
      text: "@taiwan_test_bot second",
      reply_to_message: m.message_id,
    });
    expect(reply.message_thread_id).toBe(m.message_id);
    expect(reply.is_topic_message).toBeUndefined();
    const q = await queuedFor(reply.message_id);
    expect(q.topicId).toBeUndefined();
    expect(q.reply).toEqual({});
    expect(conversationKey(q)).toBe("telegram:-1001234");
  });

  it("makes a private-chat topic (Bot API 9.3) its own conversation, answered in that topic", async () => {
    const dave = h.tg.user(31, "Dave");
    expect(() => h.tg.createTopic(h.tg.privateChat(dave), "Trip")).toThrow("has no topics"); // this bot has not enabled topics
    const tg = await FakeTelegram.start({ bot: { has_topics_enabled: true } as never });
    const own = await startHarness({}, tg);
    try {
      const chat = tg.privateChat(dave);
      const trip = tg.createTopic(chat, "Trip", undefined, dave);
      const m = tg.sendUserMessage({ chat, from: dave, text: "花蓮三天兩夜怎麼排？", message_thread_id: trip });
      const q = await tg.waitFor(
        () => own.queued.find((x) => x.messageId === String(m.message_id)),
        5000,
        "the topic message",
      );
      expect(q).toMatchObject({ chatKind: "dm", topicId: String(trip), reply: { threadId: String(trip) } });
      expect(conversationKey(q)).toBe(`telegram:31/${trip}`);
      tg.sendUserMessage({ chat, from: dave, text: "/reset", message_thread_id: trip });
      await tg.waitFor(() => own.resets.length === 1, 5000, "the reset");
      expect(own.resets[0]).toEqual({ platform: "telegram", chatId: "31", topicId: String(trip) });
      const done = await tg.waitFor(() => tg.sent.find((s) => s.text.includes("忘掉")), 5000, "the reset answer");
      expect(done.text).toBe("好的，我已經忘掉這個話題之前的對話了（其他話題不受影響）。");
      expect(done.payload.message_thread_id).toBe(trip);
    } finally {
      await own.stop();
      await tg.stop();
    }
  });

  it("says a message is too long rather than queueing it", async () => {
    const carol = h.tg.user(77, "Carol");
    const m = h.tg.sendUserMessage({ chat: h.tg.privateChat(carol), from: carol, text: "字".repeat(8001) });
    const hint = await h.tg.waitFor(() => h.tg.sent.find((s) => s.chatId === 77), 5000, "too long hint");
    expect(hint.text).toBe("訊息太長了（上限 8000 字），請縮短一點。");
    expect(h.queued.some((q) => q.messageId === String(m.message_id))).toBe(false);
  });

  it("answers a sticker without emoji in a private chat with a hint, and stays quiet in a group", async () => {
    const sticker = {
      sticker: {
        file_id: "x",
        file_unique_id: "y",
        type: "regular",
        width: 1,
        height: 1,
        is_animated: false,
        is_video: false,
      },
    };
    const inGroup = h.tg.sendUserMessage({ chat: group(), from: bob(), extra: sticker });
    const m = h.tg.sendUserMessage({ chat: h.tg.privateChat(bob()), from: bob(), extra: sticker });
    const hint = await h.tg.waitFor(() => h.tg.sent.find((s) => s.chatId === 12), 5000, "hint");
    expect(hint.text).toMatch(/^這種訊息我還看不懂。\n我看得懂：圖片（JPEG、PNG、GIF、WebP，每則訊息最多 5 張/);
    expect(hint.payload.reply_parameters).toBeUndefined();
    await settle();
    expect(
      h.tg.sent.filter(
        (s) => (s.payload.reply_parameters as { message_id?: number })?.message_id === inGroup.message_id,
      ),
    ).toHaveLength(0);
    expect(h.queued.some((q) => q.messageId === String(inGroup.message_id))).toBe(false);
    expect(h.queued.some((q) => q.messageId === String(m.message_id))).toBe(false);
  });

  it("takes a photo caption as the text, with the largest photo size within the download limit as a file reference", async () => {
    const sizes = [
      { file_id: "small", file_unique_id: "s", width: 90, height: 60, file_size: 1_000 },
      { file_id: "huge", file_unique_id: "h", width: 9000, height: 6000, file_size: 30 * 1024 * 1024 },
      { file_id: "large", file_unique_id: "l", width: 1280, height: 853, file_size: 200_000 },
    ];
    const m = h.tg.sendUserMessage({
      chat: h.tg.privateChat(alice()),
      from: alice(),
      caption: "這是什麼？",
      extra: { photo: sizes },
    });
    const queued = await queuedFor(m.message_id);
    expect(queued.text).toBe("這是什麼？");
    expect(queued.media).toEqual([{ kind: "image", fileId: "large", width: 1280, height: 853, size: 200_000 }]);
  });

  it("queues a photo without caption, a sticker as its emoji, and a voice message as a reference the worker answers", async () => {
    const chat = h.tg.privateChat(alice());
    const photo = h.tg.sendUserMessage({
      chat,
      from: alice(),
      extra: { photo: [{ file_id: "p", file_unique_id: "p", width: 10, height: 10 }] },
    });
    expect(await queuedFor(photo.message_id)).toMatchObject({ text: "", media: [{ kind: "image", fileId: "p" }] });
    const sticker = h.tg.sendUserMessage({
      chat,
      from: alice(),
      extra: {
        sticker: {
          file_id: "x",
          file_unique_id: "y",
          type: "regular",
          width: 1,
          height: 1,
          is_animated: false,
          is_video: false,
          emoji: "😂",
        },
      },
    });
    expect(await queuedFor(sticker.message_id)).toMatchObject({ text: "😂" });
    expect((await queuedFor(sticker.message_id)).media).toBeUndefined();
    const voice = h.tg.sendUserMessage({
      chat,
      from: alice(),
      extra: { voice: { file_id: "v", file_unique_id: "v", duration: 2, file_size: 900 } },
    });
    expect(await queuedFor(voice.message_id)).toMatchObject({
      text: "",
      media: [{ kind: "voice", fileId: "v", size: 900 }],
    });
    const doc = h.tg.sendUserMessage({
      chat,
      from: alice(),
      caption: "看看",
      extra: {
        document: { file_id: "d", file_unique_id: "d", file_name: "a.png", mime_type: "image/png", file_size: 5 },
      },
    });
    expect(await queuedFor(doc.message_id)).toMatchObject({
      text: "看看",
      media: [{ kind: "image", fileId: "d", name: "a.png", mimeType: "image/png", size: 5 }],
    });
  });

  it("answers /tools and /tools@bot in a group, grouped by tag with dangerous tools marked", async () => {
    const m = h.tg.sendUserMessage({ chat: group(), from: bob(), text: "/tools" });
    const answer = await h.tg.waitFor(() =>
      h.tg.sent.find((s) => (s.payload.reply_parameters as { message_id?: number })?.message_id === m.message_id),
    );
    expect(answer.text).toContain("info\n\n• get_time — Tells the current time in a time zone.");
    expect(answer.text).toContain("• ⚠️ delete_todo — Deletes a todo by id.\n");
    expect(answer.text).not.toContain("Use when the user asks");
    expect(answer.entities.some((e) => e.type === "bold")).toBe(true);
    const m2 = h.tg.sendUserMessage({ chat: group(), from: bob(), text: "/tools@taiwan_test_bot todo" });
    const a2 = await h.tg.waitFor(() =>
      h.tg.sent.find((s) => (s.payload.reply_parameters as { message_id?: number })?.message_id === m2.message_id),
    );
    expect(a2.text).toContain("add_todo");
    expect(a2.text).not.toContain("get_time");
    const m3 = h.tg.sendUserMessage({ chat: h.tg.privateChat(bob()), from: bob(), text: "/tools weather" });
    await h.tg.waitFor(() => h.tg.sent.find((s) => s.text.startsWith("沒有「weather」這個分類")));
    expect(h.queued.some((q) => [m, m2, m3].some((x) => q.messageId === String(x.message_id)))).toBe(false);
  });

  it("answers /start with what the bot does and examples, and /reset forgets the chat", async () => {
    h.tg.sendUserMessage({ chat: h.tg.privateChat(alice()), from: alice(), text: "/start" });
    const start = await h.tg.waitFor(() => h.tg.sent.find((s) => s.text.startsWith("嗨！")));
    // The harness offers get_time and the todo tools, no weather tool: /start must not advertise weather.
    expect(start.text).toContain("• 幫我記下：星期五前繳電話費");
    expect(start.text).not.toContain("天氣");
    expect(start.text).not.toContain("下雨");
    expect(start.text).toContain("/tools");
    expect(start.text).toContain("@taiwan_test_bot");
    // In a group only its administrators may /reset (getChatMember): bob is refused until he is one.
    h.tg.sendUserMessage({ chat: group(), from: bob(), text: "/reset@taiwan_test_bot" });
    await h.tg.waitFor(() => h.tg.sent.find((s) => s.text.includes("只有群組管理員")));
    expect(h.resets).toEqual([]);
    h.tg.admins.set(group().id, new Set([bob().id]));
    h.tg.sendUserMessage({ chat: group(), from: bob(), text: "/reset@taiwan_test_bot" });
    await h.tg.waitFor(() => h.resets.length === 1);
    expect(h.resets[0]).toEqual({ platform: "telegram", chatId: "-1001234" });
    await h.tg.waitFor(() => h.tg.sent.find((s) => s.text.includes("忘掉")));
    // In a forum topic, /reset names that topic only.
    const forum = h.tg.group(-100779, "Forum", true);
    h.tg.admins.set(forum.id, new Set([bob().id]));
    h.tg.sendUserMessage({ chat: forum, from: bob(), text: "/reset@taiwan_test_bot", message_thread_id: 5 });
    await h.tg.waitFor(() => h.resets.length === 2);
    expect(h.resets[1]).toEqual({ platform: "telegram", chatId: "-100779", topicId: "5" });
    const done = await h.tg.waitFor(() => h.tg.sent.find((s) => s.chatId === -100779 && s.text.includes("話題")));
    expect(done.payload.message_thread_id).toBe(5);
  });

  it("says try again when the message cannot be queued", async () => {
    h.failEnqueue.on = true;
    try {
      const m = h.tg.sendUserMessage({ chat: group(), from: bob(), text: "@taiwan_test_bot 記下買牛奶" });
      const sorry = await h.tg.waitFor(() =>
        h.tg.sent.find((s) => (s.payload.reply_parameters as { message_id?: number })?.message_id === m.message_id),
      );
      expect(sorry.text).toBe("抱歉，我現在暫時無法處理，請稍後再試一次。");
    } finally {
      h.failEnqueue.on = false;
    }
  });
});
