/**
 * The REST-only outbound half, as a worker-only process uses it: no gateway connection.
 */
import { DiscordAPIError, REST, Routes } from "discord.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createOutbound } from "../../adapters/discord/index.js";
import { ChatUnreachableError } from "../../src/outbound-errors.js";
import { silentLogger } from "../../src/log.js";
import { destinationOf, type Outbound } from "../../src/outbound.js";
import type { IncomingMessage } from "../../src/queue/incoming.js";
import { FakeDiscord } from "../fakes/discord.js";
import { testConfig } from "../helpers/config.js";

let fake: FakeDiscord;
let outbound: Outbound;
const alice = { id: "700000000000000001", username: "alice", global_name: "Alice" };

beforeAll(async () => {
  fake = await FakeDiscord.start();
  outbound = createOutbound(testConfig({ DISCORD_TOKEN: fake.token, DISCORD_API_URL: fake.apiUrl }), silentLogger);
});
afterAll(async () => {
  await fake?.close();
});

function incoming(dm: boolean): IncomingMessage {
  const m = fake.sendUserMessage(alice, "question", dm ? { dm: true } : {});
  return {
    platform: "discord",
    chatId: m.channel_id,
    chatKind: dm ? "dm" : "group",
    userId: alice.id,
    userName: "Alice",
    text: "question",
    messageId: m.id,
    sentAt: Date.now(),
    reply: dm ? {} : { guildId: fake.guildId },
  };
}

describe("sendAnswer", () => {
  it("sends a 5,000-character answer with a code block across the limit in order, each chunk ≤ 2000, fences balanced", async () => {
    const to = incoming(false);
    const code = Array.from(
      { length: 90 },
      (_, i) => `  const line${String(i).padStart(2, "0")} = "${"x".repeat(20)}";`,
    ).join("\n");
    const text = `Intro paragraph.\n\n${"字".repeat(1300)}\n\n\`\`\`ts\n${code}\n\`\`\`\n\nThe end 🎉.`;
    expect(text.length).toBeGreaterThan(5000);
    const before = fake.sent.length;
    const onSent: number[] = [];
    const refs = await outbound.sendAnswer(destinationOf(to), text, { onSent: (i) => void onSent.push(i) });
    const chunks = fake.sent.slice(before);
    expect(chunks.length).toBe(refs.length);
    expect(chunks.length).toBeGreaterThanOrEqual(3);
    expect(onSent).toEqual(chunks.map((_, i) => i));
    for (const c of chunks) {
      expect(c.content.length).toBeLessThanOrEqual(2000);
      expect((c.content.match(/^```/gm) ?? []).length % 2).toBe(0);
      expect(c.payload.allowed_mentions).toEqual({ parse: [], replied_user: false });
    }
    // Every chunk inside the code block reopens it with its language.
    const withCode = chunks.filter((c) => c.content.includes("const line"));
    expect(withCode.length).toBeGreaterThanOrEqual(2);
    for (const c of withCode) expect(c.content).toMatch(/```ts\n/);
    // In order, nothing lost: every code line appears exactly once, in sequence.
    const all = chunks.map((c) => c.content).join("\n");
    const lines = [...all.matchAll(/const line(\d\d)/g)].map((m) => Number(m[1]));
    expect(lines).toEqual(Array.from({ length: 90 }, (_, i) => i));
    expect(all.endsWith("The end 🎉.")).toBe(true);
    // First chunk replies to the user's message (no ping); later ones are plain.
    expect(chunks[0]!.payload.message_reference).toMatchObject({ message_id: to.messageId, fail_if_not_exists: false });
    expect(chunks[1]!.payload.message_reference).toBeUndefined();
  });

  it("skips chunks already sent by an earlier attempt", async () => {
    const to = incoming(false);
    const text = `${"a".repeat(1500)}\n\n${"b".repeat(1900)}\n\n${"c".repeat(100)}`;
    const before = fake.sent.length;
    const refs = await outbound.sendAnswer(destinationOf(to), text, { skip: 1 });
    expect(refs).toHaveLength(2);
    expect(fake.sent.slice(before).map((s) => s.content[0])).toEqual(["b", "c"]);
  });

  it("gives every chunk a job-derived nonce with enforce_nonce: a replayed answer is not posted again, an apology is", async () => {
    const to = incoming(true);
    const text = `${"a".repeat(1500)}\n\n${"b".repeat(1900)}`;
    const before = fake.sent.length;
    const refs = await outbound.sendAnswer(destinationOf(to), text);
    const first = fake.sent.slice(before);
    expect(first).toHaveLength(2);
    const nonces = first.map((c) => c.payload.nonce as string);
    for (const c of first) {
      expect(c.payload.enforce_nonce).toBe(true);
      expect(c.payload.nonce).toMatch(/^[0-9a-f]{25}$/);
    }
    expect(new Set(nonces).size).toBe(2);

    // The same job replayed from the start (another worker, another REST client): nothing new appears.
    const again = createOutbound(testConfig({ DISCORD_TOKEN: fake.token, DISCORD_API_URL: fake.apiUrl }), silentLogger);
    const replayed = fake.nonceReplays.length;
    expect(await again.sendAnswer(destinationOf(to), text)).toEqual(refs);
    expect(fake.sent.length).toBe(before + 2);
    expect(fake.nonceReplays.slice(replayed).map((r) => r.nonce)).toEqual(nonces);

    // The apology for the same message is other text, so it gets its own nonce and is posted.
    await outbound.sendAnswer(destinationOf(to), "抱歉，我現在無法回答，請稍後再試一次。");
    expect(fake.sent.length).toBe(before + 3);
    // Another message of the same chat with the same answer is a new message too.
    const other = { ...to, messageId: fake.sendUserMessage(alice, "again", { dm: true }).id };
    await outbound.sendAnswer(destinationOf(other), `${"a".repeat(1500)}`);
    expect(fake.sent.length).toBe(before + 4);
  });

  it("a chunk Discord accepted but never confirmed (the worker died) appears once when the job is replayed", async () => {
    const config = testConfig({ DISCORD_TOKEN: fake.token, DISCORD_API_URL: fake.apiUrl });
    // A two-part answer whose second part was accepted, its reply lost: the count says 1 sent.
    const to = incoming(false);
    const text = `${"a".repeat(1500)}\n\n${"b".repeat(1900)}`;
    const before = fake.sent.length;
    const counted: number[] = [];
    const dying = createOutbound(config, silentLogger);
    void dying
      .sendAnswer(destinationOf(to), text, {
        onSent: (i) => {
          counted.push(i);
          fake.holdNextCreate({ channelId: to.chatId }); // the next chunk is accepted but never confirmed
        },
      })
      .catch(() => {});
    await fake.waitFor(() => fake.heldCreates.find((h) => h.channelId === to.chatId), 5000, "chunk 1 accepted");
    expect(counted).toEqual([0]);
    const held = fake.heldCreates.find((h) => h.channelId === to.chatId)!;
    const replay = createOutbound(config, silentLogger);
    const refs = await replay.sendAnswer(destinationOf(to), text, { skip: counted.length });
    expect(refs).toEqual([{ chatId: to.chatId, messageId: held.messageId }]);
    expect(fake.sent.slice(before).map((m) => m.content[0])).toEqual(["a", "b"]);

    // A one-part answer accepted but never confirmed: the replay from chunk 0 posts nothing new.
    const dm = incoming(true);
    const sentBefore = fake.sent.length;
    fake.holdNextCreate({ channelId: dm.chatId });
    void dying.sendAnswer(destinationOf(dm), "短的回答").catch(() => {});
    const heldDm = await fake.waitFor(
      () => fake.heldCreates.find((h) => h.channelId === dm.chatId),
      5000,
      "the answer accepted",
    );
    expect(await replay.sendAnswer(destinationOf(dm), "短的回答")).toEqual([
      { chatId: dm.chatId, messageId: heldDm.messageId },
    ]);
    expect(fake.sent.slice(sentBefore).map((m) => m.content)).toEqual(["短的回答"]);
  });

  it("answers a DM plainly, and @everyone in an answer pings nobody", async () => {
    const to = incoming(true);
    const [ref] = await outbound.sendAnswer(destinationOf(to), "@everyone @here <@700000000000000001> look!");
    const sent = fake.sent.find((s) => s.id === ref!.messageId)!;
    expect(sent.payload.message_reference).toBeUndefined();
    expect(sent.payload.allowed_mentions).toEqual({ parse: [], replied_user: false });
    expect(sent.message.mention_everyone).toBe(false);
  });

  it("refuses a blank answer rather than sending an empty message", async () => {
    await expect(outbound.sendAnswer(destinationOf(incoming(true)), "  \n ")).rejects.toThrow(/empty/);
  });

  it("throws a ChatUnreachableError with the code for an unknown channel, without the token", async () => {
    const to = { ...incoming(true), chatId: "123456789012345678" };
    const error = await outbound.sendAnswer(destinationOf(to), "hi").catch((e: unknown) => e);
    expect(error).toBeInstanceOf(ChatUnreachableError);
    expect(error).toMatchObject({ code: 10003, status: 404, method: "sendAnswer" });
    expect(String((error as Error).message)).not.toContain(fake.token);
  });
});

describe("typing and prompts", () => {
  it("shows the typing indicator", async () => {
    const to = incoming(true);
    await outbound.sendTyping(destinationOf(to));
    expect(fake.typing.at(-1)!.channelId).toBe(to.chatId);
  });

  it("closing a prompt that was deleted is not an error", async () => {
    await expect(
      outbound.closeApprovalPrompt({ chatId: fake.channelId, messageId: "123456789012345678" }, "expired", "已過期"),
    ).resolves.toBeUndefined();
  });

  it("a prompt carries a nonce from its approval id: posting the same approval again returns the first prompt, a new approval gets its own", async () => {
    const to = incoming(true);
    const prompt = {
      approvalId: "nonceP1",
      action: "刪除待辦 #1「買牛奶」",
      requesterName: "Alice",
      expiresAt: Date.now() + 300_000,
    };
    const before = fake.sent.length;
    const first = await outbound.sendApprovalPrompt(destinationOf(to), prompt);
    expect(fake.sent.at(-1)!.payload).toMatchObject({
      nonce: expect.stringMatching(/^[0-9a-f]{25}$/),
      enforce_nonce: true,
    });
    expect(await outbound.sendApprovalPrompt(destinationOf(to), prompt)).toEqual(first);
    expect(fake.sent.length).toBe(before + 1);
    const second = await outbound.sendApprovalPrompt(destinationOf(to), { ...prompt, approvalId: "nonceP2" });
    expect(second.messageId).not.toBe(first.messageId);
    expect(fake.sent.length).toBe(before + 2);
  });

  it("a prompt's action shows as it is: Markdown in a value is escaped, the quote of a value of several lines stays a quote", async () => {
    const to = incoming(true);
    await outbound.sendApprovalPrompt(destinationOf(to), {
      approvalId: "plainP1",
      action:
        "使用 MCP 伺服器「fs」的工具 write\n• path: notes/__init__.py\n• text:\n> line one\n> **bold** [link](https://example.com)",
      requesterName: "Alice",
      expiresAt: Date.now() + 300_000,
    });
    const content = fake.sent.at(-1)!.content;
    expect(content).toContain(
      "• path: notes/\\_\\_init\\_\\_.py\n• text:\n> line one\n> \\*\\*bold\\*\\* \\[link](https://example.com)",
    );
  });

  it("a notice (a paused task's, to a group's admins) shows the names and texts in it as they are", async () => {
    const to = incoming(false);
    await outbound.sendNotice!(
      { ...destinationOf(to), mention: undefined },
      "⏸️ 給群組管理員：**Eve** 已不在這個群組，他設定的排程任務 #1（__list__ my todos）已暫停。",
      [{ label: "❌ 取消 #1", data: "tk:c:1" }],
    );
    expect(fake.sent.at(-1)!.content).toBe(
      "⏸️ 給群組管理員：\\*\\*Eve\\*\\* 已不在這個群組，他設定的排程任務 #1（\\_\\_list\\_\\_ my todos）已暫停。",
    );
  });

  it("rejects an approval id that does not fit a custom_id token", async () => {
    await expect(
      outbound.sendApprovalPrompt(destinationOf(incoming(true)), {
        approvalId: "x".repeat(120),
        action: "a",
        requesterName: "Alice",
        expiresAt: Date.now(),
      }),
    ).rejects.toThrow(RangeError);
  });
});

describe("the fake is strict", () => {
  const rest = () => new REST({ api: fake.apiUrl, retries: 0 }).setToken(fake.token);

  it("answers content over 2000 characters with 400 / 50035", async () => {
    const error = await rest()
      .post(Routes.channelMessages(fake.channelId), { body: { content: "a".repeat(2001) } })
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(DiscordAPIError);
    expect(error).toMatchObject({
      status: 400,
      code: 50035,
      rawError: { errors: { content: { _errors: [{ code: "BASE_TYPE_MAX_LENGTH" }] } } },
    });
    // Refused by the check against Discord's spec, and recorded (else this test would fail when it ends).
    expect(fake.takeSpecViolations().map((v) => [v.request, v.problems])).toEqual([
      ["POST /channels/{channel_id}/messages", ["content: must NOT have more than 2000 characters"]],
    ]);
  });

  it("counts characters, not UTF-16 units (2000 emoji are accepted)", async () => {
    const sent = (await rest().post(Routes.channelMessages(fake.channelId), {
      body: { content: "🎉".repeat(2000) },
    })) as { content: string };
    expect(sent.content.length).toBe(4000);
  });

  it("refuses a nonce over 25 characters (50035); without enforce_nonce a repeated nonce posts again, with it the earlier message comes back", async () => {
    const long = await rest()
      .post(Routes.channelMessages(fake.channelId), {
        body: { content: "x", nonce: "n".repeat(26), enforce_nonce: true },
      })
      .catch((e: unknown) => e);
    expect(long).toMatchObject({ status: 400, code: 50035 });
    expect(fake.takeSpecViolations().map((v) => v.problems)).toEqual([
      ["nonce: must NOT have more than 25 characters"],
    ]);
    const before = fake.sent.length;
    const a = (await rest().post(Routes.channelMessages(fake.channelId), {
      body: { content: "x", nonce: "same-nonce" },
    })) as { id: string; nonce: string };
    const b = (await rest().post(Routes.channelMessages(fake.channelId), {
      body: { content: "x", nonce: "same-nonce" },
    })) as { id: string };
    expect(a.nonce).toBe("same-nonce");
    expect(b.id).not.toBe(a.id);
    const c = (await rest().post(Routes.channelMessages(fake.channelId), {
      body: { content: "x", nonce: "enforced", enforce_nonce: true },
    })) as { id: string };
    const d = (await rest().post(Routes.channelMessages(fake.channelId), {
      body: { content: "y", nonce: "enforced", enforce_nonce: true },
    })) as { id: string; content: string };
    expect(d).toMatchObject({ id: c.id, content: "x" });
    expect(fake.sent.length).toBe(before + 3);
  });

  it("forgets a nonce after its window", async () => {
    let now = Date.now();
    const short = await FakeDiscord.start({ nonceWindowMs: 50, now: () => now });
    try {
      const client = new REST({ api: short.apiUrl, retries: 0 }).setToken(short.token);
      const first = (await client.post(Routes.channelMessages(short.channelId), {
        body: { content: "x", nonce: "n1", enforce_nonce: true },
      })) as { id: string };
      now += 80;
      const later = (await client.post(Routes.channelMessages(short.channelId), {
        body: { content: "x", nonce: "n1", enforce_nonce: true },
      })) as { id: string };
      expect(later.id).not.toBe(first.id);
    } finally {
      await short.close();
    }
  });

  it("answers an empty message with 400 / 50006", async () => {
    await expect(rest().post(Routes.channelMessages(fake.channelId), { body: { content: "" } })).rejects.toMatchObject({
      status: 400,
      code: 50006,
    });
  });

  it("answers a wrong token with 401", async () => {
    const bad = new REST({ api: fake.apiUrl, retries: 0 }).setToken("wrong-token");
    await expect(bad.get(Routes.gatewayBot())).rejects.toMatchObject({ status: 401 });
  });

  it("refuses a custom_id over 100 characters", async () => {
    const body = {
      content: "x",
      components: [{ type: 1, components: [{ type: 2, style: 1, label: "a", custom_id: "c".repeat(101) }] }],
    };
    await expect(rest().post(Routes.channelMessages(fake.channelId), { body })).rejects.toMatchObject({
      status: 400,
      code: 50035,
    });
    expect(fake.takeSpecViolations().map((v) => v.problems)).toEqual([
      ["components[0].components[0].custom_id: must NOT have more than 100 characters"],
    ]);
  });

  it("answers an interaction after its window with 10062 and a second callback with 40060", async () => {
    let now = Date.now();
    const late = await FakeDiscord.start({ interactionWindowMs: 50, now: () => now });
    try {
      const i = late.slashCommand(alice, "help");
      const callback = (interaction: { id: string; token: string }) =>
        fetch(`${late.apiUrl}/v10/interactions/${interaction.id}/${interaction.token}/callback`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ type: 4, data: { content: "hi" } }),
        }).then(async (r) => ({ status: r.status, body: r.status === 204 ? null : await r.json() }));
      now += 80;
      expect(await callback(i)).toEqual({ status: 404, body: { message: "Unknown interaction", code: 10062 } });
      const j = late.slashCommand(alice, "help");
      expect((await callback(j)).status).toBe(204);
      expect(await callback(j)).toEqual({
        status: 400,
        body: { message: "Interaction has already been acknowledged.", code: 40060 },
      });
    } finally {
      await late.close();
    }
  });
});

describe("rate limits and server errors", () => {
  it("waits out a 429 (Retry-After) and retries a 500, sending each chunk once", async () => {
    const to = incoming(true);
    fake.rateLimitNext({ method: "POST", path: /\/messages$/ }, 0.05);
    fake.failNext({ method: "POST", path: /\/typing$/ }, 500);
    const before = fake.sent.length;
    const started = Date.now();
    await outbound.sendAnswer(destinationOf(to), "after the limit");
    await outbound.sendTyping(destinationOf(to));
    expect(Date.now() - started).toBeGreaterThanOrEqual(40);
    expect(fake.sent.slice(before).map((s) => s.content)).toEqual(["after the limit"]);
    expect(fake.requests.filter((r) => r.status === 429 || r.status === 500).length).toBeGreaterThanOrEqual(2);
  });
});
