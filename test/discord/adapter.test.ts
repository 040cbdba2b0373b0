/**
 * The Discord adapter end to end through the real discord.js client and the fake Discord:
 * inbound filtering, slash commands, approval buttons and reactions.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { DiscordAdapter } from "../../adapters/discord/index.js";
import { EnqueueError } from "../../src/adapter.js";
import { FORWARDED_END, FORWARDED_START } from "../../src/prompts.js";
import type { IncomingMessage } from "../../src/queue/incoming.js";
import { FakeDiscord } from "../fakes/discord.js";
import { featureCommandNames, KNOWN_FEATURE_COMMANDS } from "../helpers/commands.js";
import { startHarness, type Harness } from "./harness.js";
import { destinationOf } from "../../src/outbound.js";

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.stop();
});

const alice = { id: "700000000000000001", username: "alice", global_name: "Alice" };
const bob = { id: "700000000000000002", username: "bob", global_name: "Bob" };
const otherBot = { id: "700000000000000003", username: "otherbot", bot: true };

/** Sends `ignored` then a marker that is answered; once the marker is queued, `ignored` was seen and dropped. */
async function expectIgnored(send: () => { id: string }): Promise<void> {
  const ignored = send();
  const marker = h.fake.sendUserMessage(alice, `<@${h.fake.bot.id}> marker ${ignored.id}`);
  await h.fake.waitFor(() => h.enqueued.find((e) => e.messageId === marker.id), 5000, "marker queued");
  expect(h.enqueued.find((e) => e.messageId === ignored.id)).toBeUndefined();
}

async function queued(id: string): Promise<IncomingMessage> {
  return h.fake.waitFor(() => h.enqueued.find((e) => e.messageId === id), 5000, `message ${id} queued`);
}

describe("connection", () => {
  it("identifies with the six intents and registers /help, /tools (tag choices), /reset, /reminders in DISCORD_GUILD_ID", async () => {
    expect(h.fake.readySessions).toBe(1);
    expect(h.fake.identifies[0]).toMatchObject({
      token: "[valid]",
      intents: 1 | (1 << 9) | (1 << 10) | (1 << 12) | (1 << 13) | (1 << 15),
    });
    const reg = await h.fake.waitFor(() => h.fake.commandRegistrations[0]);
    expect(reg.scope).toBe(h.fake.guildId);
    // The core's commands around every feature's (FEATURES' order), the known features' among them.
    const features = featureCommandNames("discord");
    expect(features.filter((n) => (KNOWN_FEATURE_COMMANDS as readonly string[]).includes(n))).toEqual(
      KNOWN_FEATURE_COMMANDS,
    );
    expect(reg.body.map((c) => c.name)).toEqual([
      "help",
      "tools",
      "reset",
      ...features,
      "usage",
      "approve",
      "enable",
      "disable",
    ]);
    const tools = reg.body[1] as { options: { name: string; choices: { value: string }[] }[] };
    expect(tools.options[0]!.choices.map((c) => c.value)).toEqual(["info", "todo"]);
  });
});

describe("inbound messages", () => {
  it("queues a DM as it is", async () => {
    const m = h.fake.sendUserMessage(alice, "明天會下雨嗎？", { dm: true });
    expect(await queued(m.id)).toMatchObject({
      platform: "discord",
      chatKind: "dm",
      chatId: m.channel_id,
      userId: alice.id,
      userName: "Alice",
      text: "明天會下雨嗎？",
      reply: {},
    });
  });

  it("ignores a guild message that does not address the bot", async () => {
    await expectIgnored(() => h.fake.sendUserMessage(bob, "just chatting, <@700000000000000001>"));
  });

  it("answers <@id>, <@!id>, the managed role, and replies to the bot, with the mentions stripped", async () => {
    const a = h.fake.sendUserMessage(alice, `<@${h.fake.bot.id}> 現在幾點？`);
    expect(await queued(a.id)).toMatchObject({
      chatKind: "group",
      chatId: h.fake.channelId,
      text: "現在幾點？",
      reply: { guildId: h.fake.guildId },
    });

    const b = h.fake.sendUserMessage(alice, `hey <@!${h.fake.bot.id}>, what time is it?`, {
      channelId: h.fake.threadId,
    });
    expect(await queued(b.id)).toMatchObject({
      chatId: h.fake.threadId,
      text: "hey , what time is it?".replace(" ,", ","),
    });

    const c = h.fake.sendUserMessage(alice, `<@&${h.fake.botRoleId}> 幫我算 1+1`);
    expect((await queued(c.id)).text).toBe("幫我算 1+1");

    const botMessage = h.fake.sendUserMessage(h.fake.bot, "我是機器人的回答");
    const d = h.fake.sendUserMessage(alice, "那後天呢？", { replyTo: botMessage.id });
    expect((await queued(d.id)).text).toBe("那後天呢？");

    const e = h.fake.sendUserMessage(alice, `<@${h.fake.bot.id}> ask <@${bob.id}> too`);
    expect((await queued(e.id)).text).toBe("ask @Bob too");
  });

  it("ignores a reply to someone else, bots, webhooks and system messages", async () => {
    const bobs = h.fake.sendUserMessage(bob, "hi");
    await expectIgnored(() => h.fake.sendUserMessage(alice, "reply to bob", { replyTo: bobs.id }));
    await expectIgnored(() => h.fake.sendUserMessage(otherBot, `<@${h.fake.bot.id}> I am a bot`));
    await expectIgnored(() => h.fake.sendUserMessage(h.fake.bot, `<@${h.fake.bot.id}> myself`));
    await expectIgnored(() =>
      h.fake.sendUserMessage({ ...bob, bot: true }, `<@${h.fake.bot.id}> hook`, { webhookId: "760000000000000001" }),
    );
    await expectIgnored(() => h.fake.sendUserMessage(bob, "", { type: 7 })); // member join
  });

  it("queues a DM with only an attachment, with the attachment as a file reference", async () => {
    const attachment = {
      id: "1",
      filename: "a.png",
      size: 1,
      url: "https://cdn.discordapp.com/attachments/1/1/a.png",
      proxy_url: "https://media.discordapp.net/attachments/1/1/a.png",
      content_type: "image/png",
      width: 4,
      height: 3,
    };
    const message = h.fake.sendUserMessage(alice, "", { dm: true, attachments: [attachment] });
    expect(await queued(message.id)).toMatchObject({
      text: "",
      media: [
        { kind: "image", url: attachment.url, size: 1, name: "a.png", mimeType: "image/png", width: 4, height: 3 },
      ],
    });
  });

  it("a forward in a DM is the question, marked as someone else's words; its attachments are noted", async () => {
    h.fake.addUser(bob);
    const forward = h.fake.forwardMessage(
      alice,
      { content: `<@${bob.id}> 週五的會議改到下午三點，記得帶簡報` },
      { dm: true },
    );
    expect(forward.content).toBe("");
    expect((await queued(forward.id)).text).toBe(
      [FORWARDED_START, "@Bob 週五的會議改到下午三點，記得帶簡報", FORWARDED_END].join("\n"),
    );

    const png = { id: "1", filename: "a.png", size: 1, url: "https://cdn/a.png", proxy_url: "https://cdn/a.png" };
    const withFiles = h.fake.forwardMessage(
      alice,
      { content: "看這兩張圖", attachments: [png, { ...png, id: "2" }] },
      { dm: true },
    );
    expect((await queued(withFiles.id)).text).toBe(
      [FORWARDED_START, "看這兩張圖", "(It also had 2 attachments, which you cannot see.)", FORWARDED_END].join("\n"),
    );

    // A stored message forwarded again (here one of the bot's own answers) keeps its text.
    const botAnswer = h.fake.sendUserMessage(h.fake.bot, "臺北明天 20–27°C");
    const again = h.fake.forwardMessage(alice, botAnswer.id, { dm: true });
    expect((await queued(again.id)).text).toContain("臺北明天 20–27°C");
  });

  it("a forward of only a picture gets a hint (a forward's attachments are not read); a forward in a guild channel does not address the bot", async () => {
    const before = h.fake.sent.length;
    const png = { id: "1", filename: "a.png", size: 1, url: "https://cdn/a.png", proxy_url: "https://cdn/a.png" };
    const picture = h.fake.forwardMessage(alice, { content: "", attachments: [png] }, { dm: true });
    const hint = await h.fake.waitFor(() => h.fake.sent.slice(before).find((m) => m.channelId === picture.channel_id));
    expect(hint.content).toBe("轉傳訊息裡的附件我讀不到：請直接把檔案傳給我，或用文字告訴我你需要什麼。");
    expect(h.enqueued.find((e) => e.messageId === picture.id)).toBeUndefined();

    await expectIgnored(() => h.fake.forwardMessage(alice, { content: `<@${h.fake.bot.id}> 這個要處理嗎？` }));
  });

  it("warns once how to enable the Message Content intent when a mention arrives empty", async () => {
    const base = h.fake.sendUserMessage(bob, "x");
    for (let i = 0; i < 2; i++) {
      h.fake.dispatchRaw("MESSAGE_CREATE", {
        ...base,
        id: `${base.id.slice(0, -1)}${i + 2}`,
        content: "",
        mentions: [h.fake.bot],
        channel_type: 0,
      });
    }
    await h.fake.waitFor(() => h.logLines().find((l) => String(l.msg).includes("Message Content")));
    await new Promise((r) => setTimeout(r, 50));
    const warnings = h.logLines().filter((l) => String(l.msg).includes("Privileged Gateway Intents"));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]!.level).toBe(40);
  });

  it("answers a localized try-again message when the queue is down", async () => {
    h.failEnqueue(new EnqueueError("redis down"));
    try {
      const m = h.fake.sendUserMessage(alice, "hello", { dm: true });
      const reply = await h.fake.waitFor(() =>
        h.fake.sent.find((s) => s.channelId === m.channel_id && s.content.includes("稍後再試")),
      );
      expect(reply.payload.allowed_mentions).toEqual({ parse: [], replied_user: false });
    } finally {
      h.failEnqueue(undefined);
    }
  });
});

describe("slash commands", () => {
  it("/tools answers ephemerally within 3 s, grouped by tag, dangerous marked", async () => {
    const i = h.fake.slashCommand(alice, "tools");
    const res = await h.fake.waitFor(() => i.response);
    expect(res.at - i.createdAt).toBeLessThan(3000);
    expect(res.type).toBe(4);
    expect(res.data?.flags).toBe(64);
    const text = String(res.data?.content);
    expect(text).toContain("**info**");
    expect(text.split("\n").find((l) => l.includes("delete_todo"))).toContain("⚠️");
    expect(text.split("\n").find((l) => l.includes("add_todo"))).not.toContain("⚠️");
    expect(text).toContain("Current time in a time zone.");
    expect(text).not.toContain("Second line");
  });

  it("/tools with a tag lists that tag; an unknown tag lists the tags", async () => {
    const i = h.fake.slashCommand(alice, "tools", { tag: "todo" });
    const text = String((await h.fake.waitFor(() => i.response)).data?.content);
    expect(text).toContain("add_todo");
    expect(text).not.toContain("get_time");
    const j = h.fake.slashCommand(alice, "tools", { tag: "nope", dm: true, locale: "en-US" });
    const unknown = String((await h.fake.waitFor(() => j.response)).data?.content);
    expect(unknown).toMatch(/^There is no tag .nope.\. Tags: .*info.*todo/);
  });

  it("/reset forgets the chat and says so (in a server: a member with Manage Messages in the channel)", async () => {
    const i = h.fake.slashCommand(alice, "reset", { permissions: FakeDiscord.MANAGE_MESSAGES_PERMISSIONS });
    const res = await h.fake.waitFor(() => i.response);
    expect(h.resets).toContainEqual({ platform: "discord", chatId: h.fake.channelId });
    expect(res.data?.flags).toBe(64);
    expect(String(res.data?.content)).toContain("忘掉");
  });

  it("/reset in a server by a member without Manage Messages is refused and forgets nothing", async () => {
    const before = h.resets.length;
    const i = h.fake.slashCommand(alice, "reset");
    const res = await h.fake.waitFor(() => i.response);
    expect(String(res.data?.content)).toContain("只有群組管理員");
    expect(h.resets.length).toBe(before);
  });

  it("defers when the work takes longer than 2 s and edits the answer in, still within 3 s", async () => {
    const original = h.context.resetConversation;
    h.context.resetConversation = async (chat) => {
      await new Promise((r) => setTimeout(r, 2300));
      return original(chat);
    };
    try {
      const i = h.fake.slashCommand(alice, "reset", { dm: true });
      const res = await h.fake.waitFor(() => i.response, 4000);
      expect(res.type).toBe(5);
      expect(res.data?.flags).toBe(64);
      expect(res.at - i.createdAt).toBeLessThan(3000);
      const edit = await h.fake.waitFor(() => i.edits[0], 4000);
      expect(String(edit.content)).toContain("忘掉");
    } finally {
      h.context.resetConversation = original;
    }
  });

  it("a refused reset (Redis down) gets a try-again answer", async () => {
    const original = h.context.resetConversation;
    h.context.resetConversation = async () => {
      throw new Error("Connection is closed.");
    };
    try {
      const i = h.fake.slashCommand(alice, "reset", { permissions: FakeDiscord.MANAGE_MESSAGES_PERMISSIONS });
      expect(String((await h.fake.waitFor(() => i.response)).data?.content)).toContain("稍後再試");
    } finally {
      h.context.resetConversation = original;
    }
  });

  it("/help lists example requests", async () => {
    const i = h.fake.slashCommand(alice, "help", { dm: true });
    const text = String((await h.fake.waitFor(() => i.response)).data?.content);
    expect(text.split("\n").filter((l) => l.startsWith("- ")).length).toBeGreaterThanOrEqual(3);
    // The harness offers no weather tool: /help must not advertise weather.
    expect(text).not.toMatch(/天氣|下雨|weather/i);
    expect(text).toContain("/usage");
  });
});

describe("approval prompts", () => {
  async function prompt(approvalId: string, dm = false) {
    const m = h.fake.sendUserMessage(
      alice,
      dm ? "刪掉待辦 3" : `<@${h.fake.bot.id}> 刪掉待辦 3`,
      dm ? { dm: true } : {},
    );
    const job = await queued(m.id);
    h.decider.approvals.set(approvalId, { requesterId: alice.id, requesterName: "Alice" });
    const ref = await h.adapter.outbound.sendApprovalPrompt(destinationOf(job), {
      approvalId,
      action: "刪除待辦 #3「買牛奶」",
      requesterName: "Alice",
      expiresAt: Date.now() + 300_000,
    });
    await h.fake.waitFor(
      () => h.fake.reactionUsers(ref.messageId, "❌").includes(h.fake.bot.id),
      5000,
      "bot reactions",
    );
    return { job, ref };
  }

  it("renders buttons and reactions; another user's click is refused; the requester's click decides", async () => {
    const { ref } = await prompt("Ab3dE5gH");
    const sent = h.fake.message(ref.messageId)!;
    expect(sent.content).toContain("刪除待辦 #3「買牛奶」");
    expect(sent.content).toContain("**Alice**");
    const row = (sent.components as { components: { custom_id: string; label: string; disabled: boolean }[] }[])[0]!;
    expect(row.components.map((c) => [c.label, c.custom_id])).toEqual([
      ["確認", "ap:Ab3dE5gH:y"],
      ["取消", "ap:Ab3dE5gH:n"],
    ]);
    expect(h.fake.reactionUsers(ref.messageId, "✅")).toEqual([h.fake.bot.id]);

    const foreign = h.fake.clickButton(bob, ref.messageId, "ap:Ab3dE5gH:y");
    const refused = await h.fake.waitFor(() => foreign.response);
    expect(refused).toMatchObject({ type: 4, data: { flags: 64, content: "只有 Alice 可以決定。" } });
    expect(h.decider.approvals.get("Ab3dE5gH")!.decided).toBeUndefined();

    const own = h.fake.clickButton(alice, ref.messageId, "ap:Ab3dE5gH:y");
    expect((await h.fake.waitFor(() => own.response)).data?.content).toBe("已確認，處理中…");
    expect(h.decider.approvals.get("Ab3dE5gH")!.decided).toBe(true);

    const again = h.fake.clickButton(alice, ref.messageId, "ap:Ab3dE5gH:n");
    expect((await h.fake.waitFor(() => again.response)).data?.content).toBe("這個請求已經處理過了。");

    await h.adapter.outbound.closeApprovalPrompt(ref, "approved", "已刪除待辦 #3「買牛奶」");
    const edited = h.fake.message(ref.messageId)!;
    expect(edited.content).toBe("✅ 已刪除待辦 #3「買牛奶」");
    const buttons = (edited.components as { components: { disabled: boolean; custom_id: string }[] }[])[0]!.components;
    expect(buttons.every((b) => b.disabled)).toBe(true);
    expect(buttons.some((b) => b.custom_id.includes("Ab3dE5gH"))).toBe(false);
    expect(h.fake.edits.at(-1)!.payload.allowed_mentions).toEqual({ parse: [], replied_user: false });
    expect(h.fake.reactionUsers(ref.messageId, "✅")).toEqual([]);

    await h.adapter.outbound.closeApprovalPrompt(ref, "declined", "❌ 已取消，未執行：刪除待辦 #3");
    expect(h.fake.message(ref.messageId)!.content).toBe("❌ 已取消，未執行：刪除待辦 #3");
  });

  it("decides by the requester's reaction; the bot's own and others' reactions change nothing", async () => {
    const { ref } = await prompt("Rx9_k2");
    // The bot's own ✅/❌ came back as MESSAGE_REACTION_ADD and were ignored.
    expect(h.decider.calls.filter((c) => c.request.approvalId === "Rx9_k2")).toEqual([]);

    h.fake.react(bob, ref.messageId, "✅");
    await h.fake.waitFor(
      () => h.fake.reactions.find((r) => r.op === "remove" && r.messageId === ref.messageId && r.userId === bob.id),
      5000,
      "bob's reaction removed",
    );
    expect(h.decider.calls.at(-1)!.result).toEqual({ status: "not_requester", requesterName: "Alice" });
    expect(h.decider.approvals.get("Rx9_k2")!.decided).toBeUndefined();

    h.fake.react(alice, ref.messageId, "👍");
    h.fake.react(alice, ref.messageId, "❌");
    await h.fake.waitFor(() => h.decider.approvals.get("Rx9_k2")!.decided === false, 5000, "declined by reaction");
    expect(h.decider.calls.filter((c) => c.request.approvalId === "Rx9_k2").map((c) => c.request.deciderId)).toEqual([
      bob.id,
      alice.id,
    ]);
  });

  it("answers try-again when a decision cannot be recorded (Redis down), by button and by reaction", async () => {
    const { ref } = await prompt("down1");
    const decide = h.decider.decide;
    h.decider.decide = async () => {
      throw new Error("Connection is closed.");
    };
    try {
      const click = h.fake.clickButton(alice, ref.messageId, "ap:down1:y");
      expect((await h.fake.waitFor(() => click.response)).data).toMatchObject({
        flags: 64,
        content: expect.stringContaining("稍後再試"),
      });
      const before = h.fake.sent.length;
      h.fake.react(alice, ref.messageId, "✅");
      const reply = await h.fake.waitFor(() => h.fake.sent.slice(before).find((s) => s.content.includes("稍後再試")));
      expect(reply.payload.message_reference).toMatchObject({ message_id: ref.messageId });
    } finally {
      h.decider.decide = decide;
    }
  });

  it("works in a DM, and decides by reaction on a message discord.js never cached", async () => {
    const { ref } = await prompt("dmPrompt1", true);
    const channel = (h.adapter as DiscordAdapter).client!.channels.cache.get(ref.chatId);
    if (channel && "messages" in channel) channel.messages.cache.delete(ref.messageId);
    h.fake.react(alice, ref.messageId, "✅");
    await h.fake.waitFor(() => h.decider.approvals.get("dmPrompt1")!.decided === true, 5000, "approved by reaction");
    expect(h.fake.requests.some((r) => r.method === "GET" && r.path.endsWith(`/messages/${ref.messageId}`))).toBe(true);
  });

  it("after an adapter restart (a new discord.js client, nothing cached) a ✅ in a DM and a ❌ in a guild still decide", async () => {
    const dm = await prompt("dmRestart1", true);
    const guild = await prompt("guildRestart1");
    await h.restartAdapter();
    const client = (h.adapter as DiscordAdapter).client!;
    expect(client.channels.cache.has(dm.ref.chatId)).toBe(false);

    const requestsBefore = h.fake.requests.length;
    h.fake.react(bob, dm.ref.messageId, "✅"); // not the requester: refused, and a DM reaction cannot be removed
    h.fake.react(alice, dm.ref.messageId, "✅");
    h.fake.react(alice, guild.ref.messageId, "❌");
    await h.fake.waitFor(
      () => h.decider.approvals.get("dmRestart1")!.decided === true,
      5000,
      "the DM prompt approved by reaction",
    );
    await h.fake.waitFor(
      () => h.decider.approvals.get("guildRestart1")!.decided === false,
      5000,
      "the guild prompt declined by reaction",
    );
    const calls = h.decider.calls.filter((c) => c.request.approvalId === "dmRestart1");
    expect(calls.map((c) => [c.request.deciderId, c.result.status])).toEqual([
      [bob.id, "not_requester"],
      [alice.id, "accepted"],
    ]);
    const fetched = h.fake.requests
      .slice(requestsBefore)
      .filter((r) => r.method === "GET")
      .map((r) => r.path);
    expect(fetched).toContain(`/api/v10/channels/${dm.ref.chatId}`);
    expect(fetched).toContain(`/api/v10/channels/${dm.ref.chatId}/messages/${dm.ref.messageId}`);
    expect(
      h.fake.reactions.filter(
        (r) => r.op === "remove" && r.userId !== h.fake.bot.id && r.messageId === dm.ref.messageId,
      ),
    ).toEqual([]);
  });

  /** The bot's replies to the prompt `messageId` sent after the first `after` messages. */
  const repliesTo = (messageId: string, after: number) =>
    h.fake.sent
      .slice(after)
      .filter((s) => (s.payload.message_reference as { message_id?: string } | undefined)?.message_id === messageId);

  it("the requester's reaction on a prompt decided before (its edit failed) is told so in a reply to it, in a guild mentioning only them", async () => {
    const { ref } = await prompt("told1");
    const before = h.fake.sent.length;
    h.fake.react(alice, ref.messageId, "✅");
    await h.fake.waitFor(() => h.decider.approvals.get("told1")!.decided === true, 5000, "approved by reaction");
    h.fake.react(alice, ref.messageId, "❌");
    const told = await h.fake.waitFor(() => repliesTo(ref.messageId, before)[0], 5000, "the notice");
    expect(told.content).toBe(`<@${alice.id}> 這個請求已經處理過了。`);
    expect(told.payload.allowed_mentions).toMatchObject({ users: [alice.id], replied_user: false });
    expect((told.payload.allowed_mentions as { parse?: string[] }).parse ?? []).toEqual([]);
    // The accepted ✅ itself was not answered (the worker edits the prompt): one reply only.
    expect(repliesTo(ref.messageId, before)).toHaveLength(1);
    expect(h.decider.approvals.get("told1")!.decided).toBe(true);
  });

  it("in a DM the notice mentions nobody, and reacting again on the same prompt says nothing more", async () => {
    const { ref } = await prompt("told2", true);
    const before = h.fake.sent.length;
    h.fake.react(alice, ref.messageId, "✅");
    await h.fake.waitFor(() => h.decider.approvals.get("told2")!.decided === true, 5000, "approved by reaction");
    h.fake.react(alice, ref.messageId, "❌");
    const told = await h.fake.waitFor(() => repliesTo(ref.messageId, before)[0], 5000, "the notice");
    expect(told.content).toBe("這個請求已經處理過了。");
    expect(told.payload.allowed_mentions).toMatchObject({ users: [], replied_user: false });
    // Alice takes her ✅ away and gives it again: decided again as `already_decided`, not answered again.
    h.fake.dispatchRaw("MESSAGE_REACTION_ADD", {
      user_id: alice.id,
      channel_id: ref.chatId,
      message_id: ref.messageId,
      emoji: { id: null, name: "✅" },
      message_author_id: h.fake.bot.id,
      burst: false,
      burst_colors: [],
      type: 0,
    });
    const calls = () => h.decider.calls.filter((c) => c.request.approvalId === "told2");
    await h.fake.waitFor(() => calls().length === 3, 5000, "the third reaction decided");
    expect(calls().map((c) => c.result.status)).toEqual(["accepted", "already_decided", "already_decided"]);
    // After its decision the third reaction's handler sends nothing (the prompt was answered once): let it end.
    await new Promise((resolve) => setImmediate(resolve));
    expect(repliesTo(ref.messageId, before)).toHaveLength(1);
  });

  it("someone else's reaction on a prompt decided before is told so too, in a guild mentioning only them, and their press ephemerally", async () => {
    const { ref } = await prompt("told3");
    const before = h.fake.sent.length;
    h.fake.react(alice, ref.messageId, "✅");
    await h.fake.waitFor(() => h.decider.approvals.get("told3")!.decided === true, 5000, "approved by reaction");
    const press = h.fake.clickButton(bob, ref.messageId, "ap:told3:n");
    expect((await h.fake.waitFor(() => press.response)).data?.content).toBe("這個請求已經處理過了。");
    h.fake.react(bob, ref.messageId, "❌");
    const told = await h.fake.waitFor(() => repliesTo(ref.messageId, before)[0], 5000, "the notice");
    expect(told.content).toBe(`<@${bob.id}> 這個請求已經處理過了。`);
    expect(told.payload.allowed_mentions).toMatchObject({ users: [bob.id], replied_user: false });
    expect(h.decider.calls.filter((c) => c.request.approvalId === "told3").map((c) => c.result.status)).toEqual([
      "accepted",
      "already_decided",
      "already_decided",
    ]);
  });

  it("the requester's reaction on a prompt that expired without its edit is told so once, in a guild mentioning only them; no one else's", async () => {
    const { ref } = await prompt("gone1");
    h.decider.approvals.delete("gone1"); // expired: the decider knows it no more (not_found)
    const before = h.fake.sent.length;
    h.fake.react(bob, ref.messageId, "✅");
    h.fake.react(alice, ref.messageId, "✅");
    const told = await h.fake.waitFor(() => repliesTo(ref.messageId, before)[0], 5000, "the notice");
    expect(told.content).toBe(`<@${alice.id}> 這個確認請求已過期或不存在。`);
    expect(told.payload.allowed_mentions).toMatchObject({ users: [alice.id], replied_user: false });
    expect((told.payload.allowed_mentions as { parse?: string[] }).parse ?? []).toEqual([]);
    h.fake.react(alice, ref.messageId, "❌");
    const calls = () => h.decider.calls.filter((c) => c.request.approvalId === "gone1");
    await h.fake.waitFor(() => calls().length === 3, 5000, "the three reactions decided");
    expect(calls().map((c) => c.result.status)).toEqual(["not_found", "not_found", "not_found"]);
    // After its decision the third reaction's handler sends nothing (the prompt was answered once): let it end.
    await new Promise((resolve) => setImmediate(resolve));
    expect(repliesTo(ref.messageId, before)).toEqual([told]);
  });

  it("in a DM the expired prompt's notice mentions nobody", async () => {
    const { ref } = await prompt("gone2", true);
    h.decider.approvals.delete("gone2");
    const before = h.fake.sent.length;
    h.fake.react(alice, ref.messageId, "❌");
    const told = await h.fake.waitFor(() => repliesTo(ref.messageId, before)[0], 5000, "the notice");
    expect(told.content).toBe("這個確認請求已過期或不存在。");
    expect(told.payload.allowed_mentions).toMatchObject({ users: [], replied_user: false });
  });

  it("a ✅ on someone else's message is ignored without fetching it", async () => {
    const m = h.fake.sendUserMessage(alice, "隨便一則訊息", { dm: true });
    await queued(m.id);
    const before = h.fake.requests.length;
    const calls = h.decider.calls.length;
    h.fake.react(alice, m.id, "✅");
    const marker = h.fake.sendUserMessage(alice, "marker after reaction", { dm: true });
    await queued(marker.id);
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(h.fake.requests.slice(before).filter((r) => r.method === "GET")).toEqual([]);
    expect(h.decider.calls.length).toBe(calls);
  });
});

describe("secrets", () => {
  it("no log line carries the bot token", () => {
    const all = JSON.stringify(h.logLines());
    expect(all.length).toBeGreaterThan(100);
    expect(all).not.toContain(h.fake.token);
  });
});
