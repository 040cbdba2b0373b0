/**
 * Issue 31, settings per conversation, on Discord end to end: the real discord.js client (adapter
 * part) and the worker part against the fake Discord REST + gateway, the strict fake Messages API
 * and a real Redis. Slash commands `/persona`, `/model`, `/settings` and the settings buttons of
 * their ephemeral replies; who may change them (Manage Messages in the channel, as for `/reset`).
 */
import { describe, expect, it } from "vitest";
import { SETTINGS_TEXT } from "../../src/commands/settings.js";
import { localize } from "../../src/i18n.js";
import { conversationKeys } from "../../src/queue/keys.js";
import type { RedisClient } from "../../src/redis.js";
import type { FakeMessageReply, FakeRequest } from "../fakes/anthropic.js";
import { FakeDiscord, type FakeInteraction, type FakeUser, type SentMessage } from "../fakes/discord.js";
import { useStack, type Stack } from "./harness.js";
import { ANSWER_TIMEOUT_MS, QUIET_WINDOW_MS, requestsFor } from "./scenarios-common.js";
import { lastUserTyped, scriptedModel } from "./scripted-model.js";

/** The scripted model, which also refuses (`stop_reason: "refusal"`) when asked to: the bot's own apology follows. */
function settingsModel(request: FakeRequest): FakeMessageReply {
  if (lastUserTyped(request)?.includes("please refuse")) return { content: [], stop_reason: "refusal" };
  return scriptedModel(request);
}

let stack: Stack;
let redis: RedisClient;
useStack(
  { env: { MODELS: "claude-opus-5=Opus,claude-haiku-5=Haiku" }, model: settingsModel },
  (started, connection) => {
    stack = started;
    redis = connection;
  },
);

const zh = (texts: Parameters<typeof localize>[1], params?: Record<string, string | number>) =>
  localize("zh-TW", texts, params);
const ADMIN = FakeDiscord.MANAGE_MESSAGES_PERMISSIONS;

let nextUser = 0;
function user(name: string): FakeUser {
  nextUser += 1;
  return { id: `73100000000000${String(nextUser).padStart(4, "0")}`, username: name.toLowerCase(), global_name: name };
}

const sentIn = (channelId: string): SentMessage[] => stack.discord.messagesIn(channelId);

/** `author` writes `content` in a DM (or a guild channel, mentioning the bot unless `mention: false`); resolves with the bot's next message there. */
async function ask(
  author: FakeUser,
  content: string,
  where: { channelId?: string; mention?: boolean } = {},
): Promise<SentMessage> {
  const dc = stack.discord;
  const text = where.channelId && where.mention !== false ? `<@${dc.bot.id}> ${content}` : content;
  const place = where.channelId ? { channelId: where.channelId } : { dm: true };
  return (await dc.ask(author, text, place, ANSWER_TIMEOUT_MS)).answer;
}

/** The (ephemeral) reply to an interaction, deferred or not. */
async function ephemeral(i: FakeInteraction): Promise<string> {
  const dc = stack.discord;
  const res = await dc.waitFor(() => i.response, ANSWER_TIMEOUT_MS, "the interaction answered");
  if (res.type === 5) return String((await dc.waitFor(() => i.edits[0], ANSWER_TIMEOUT_MS)).content);
  return String(res.data?.content);
}

/** A slash command in a DM (`dm`) or the guild's text channel, with its option and the member's permissions. */
async function slash(
  author: FakeUser,
  name: string,
  options: { dm?: boolean; channelId?: string; values?: Record<string, string>; permissions?: string } = {},
): Promise<{ interaction: FakeInteraction; text: string }> {
  const interaction = stack.discord.slashCommand(author, name, options);
  return { interaction, text: await ephemeral(interaction) };
}

function requestFor(fragment: string): FakeRequest {
  const found = requestsFor(stack, fragment);
  expect(found).toHaveLength(1);
  return found[0]!;
}

function systemOf(request: FakeRequest): string {
  return typeof request.system === "string" ? request.system : (request.system ?? []).map((b) => b.text).join("\n");
}

/** The `custom_id`s of an interaction's ephemeral reply. */
function buttonsOf(i: FakeInteraction): string[] {
  const rows = (i.response?.data?.components ?? []) as { components: { custom_id: string }[] }[];
  return rows.flatMap((r) => r.components.map((c) => c.custom_id));
}

const TUTOR = "You are a patient maths tutor who answers in short steps.";

describe("Discord settings", () => {
  it("a persona set in a DM reaches the system prompt of that DM's next request, and not another DM's", async () => {
    const ann = user("Ann");
    const ben = user("Ben");
    expect((await slash(ann, "persona", { dm: true, values: { text: TUTOR } })).text).toBe(
      zh(SETTINGS_TEXT.personaSet),
    );
    await ask(ann, "persona check (Ann)");
    expect(systemOf(requestFor("persona check (Ann)"))).toContain(`<persona>\n${TUTOR}\n</persona>`);
    await ask(ben, "persona check (Ben)");
    expect(systemOf(requestFor("persona check (Ben)"))).not.toContain("<persona>");
  });

  it("in a server channel a member's /persona is refused; a member with Manage Messages sets it", async () => {
    const dc = stack.discord;
    const member = user("Member");
    const mod = user("Mod");
    const key = conversationKeys({ platform: "discord", chatId: dc.channelId }).settings;
    expect((await slash(member, "persona", { values: { text: TUTOR } })).text).toBe(zh(SETTINGS_TEXT.notAllowed));
    expect(await redis.exists(key)).toBe(0);
    expect((await slash(mod, "persona", { values: { text: TUTOR }, permissions: ADMIN })).text).toBe(
      zh(SETTINGS_TEXT.personaSet),
    );
    await ask(member, "channel persona check", { channelId: dc.channelId });
    expect(systemOf(requestFor("channel persona check"))).toContain(TUTOR);
    // The thread is a channel of its own: no persona there.
    await ask(member, "thread persona check", { channelId: dc.threadId });
    expect(systemOf(requestFor("thread persona check"))).not.toContain("<persona>");
  });

  it("/model switches the DM's requests among MODELS (its choices are MODELS) and refuses others", async () => {
    const dc = stack.discord;
    const cai = user("Cai");
    const registered = dc.commandRegistrations.at(-1)!.body.find((c) => c.name === "model") as {
      options?: { choices?: { value: string }[] }[];
    };
    expect(registered.options?.[0]?.choices?.map((c) => c.value)).toEqual(["claude-opus-5", "claude-haiku-5"]);
    expect((await slash(cai, "model", { dm: true, values: { id: "claude-haiku-5" } })).text).toBe(
      zh(SETTINGS_TEXT.modelSet, { model: "Haiku" }),
    );
    await ask(cai, "model check 1 (Cai)");
    expect(requestFor("model check 1 (Cai)").model).toBe("claude-haiku-5");
    expect((await slash(cai, "model", { dm: true, values: { id: "claude-sonnet-9" } })).text).toBe(
      zh(SETTINGS_TEXT.modelUnknown, {
        model: "claude-sonnet-9",
        list: "Opus (claude-opus-5), Haiku (claude-haiku-5)",
      }),
    );
    await ask(cai, "model check 2 (Cai)");
    expect(requestFor("model check 2 (Cai)").model).toBe("claude-haiku-5");
    await ask(user("Dee"), "model check (Dee)");
    expect(requestFor("model check (Dee)").model).toBe("claude-opus-5");
  });

  it("language en with a settings button: the bot's own messages in that DM are in English", async () => {
    const eli = user("Eli");
    const listing = await slash(eli, "settings", { dm: true });
    expect(listing.text).toContain(zh(SETTINGS_TEXT.titleChat));
    expect(buttonsOf(listing.interaction)).toContain("st:l:en");
    const pressed = stack.discord.clickEphemeralButton(eli, listing.interaction, "st:l:en");
    const shown = await ephemeral(pressed);
    expect(shown).toContain(localize("en", SETTINGS_TEXT.languageSet));
    expect(shown).toContain("Settings of this chat:");
    expect((await ask(eli, "please refuse (Eli)")).content).toBe(
      "Sorry, I can't help with that request. Could you describe what you need in another way?",
    );
    expect((await slash(eli, "persona", { dm: true })).text).toMatch(/^There is no persona here\./);
    expect((await ask(user("Fei"), "please refuse (Fei)")).content).toBe(
      "抱歉，這個請求我無法協助。可以換個方式說明你想做的事嗎？",
    );
  });

  it("replies all: a channel's every message is answered, unmentioned; a settings press without Manage Messages changes nothing", async () => {
    const dc = stack.discord;
    const mod = user("Mod2");
    const member = user("Member2");
    const key = conversationKeys({ platform: "discord", chatId: dc.channelId }).settings;
    const listing = await slash(mod, "settings", { permissions: ADMIN });
    expect(listing.text).toContain(zh(SETTINGS_TEXT.allWarning));
    expect(buttonsOf(listing.interaction)).toContain("st:r:all");
    // The same press, but the member's permissions no longer include Manage Messages: nothing changes.
    const refused = dc.clickEphemeralButton(mod, listing.interaction, "st:r:all");
    expect(await ephemeral(refused)).toBe(zh(SETTINGS_TEXT.notAllowed));
    expect(JSON.parse((await redis.get(key))!)).not.toHaveProperty("replies");

    const pressed = dc.clickEphemeralButton(mod, listing.interaction, "st:r:all", { permissions: ADMIN });
    expect(await ephemeral(pressed)).toContain(zh(SETTINGS_TEXT.repliesAllSet));
    const answer = await ask(member, "hello without a mention", { channelId: dc.channelId, mention: false });
    expect(answer.content).toBe("You said: hello without a mention");

    // The thread (another conversation) still needs a mention.
    const before = sentIn(dc.threadId).length;
    dc.sendUserMessage(member, "hello thread without a mention", { channelId: dc.threadId });
    await new Promise((r) => setTimeout(r, QUIET_WINDOW_MS));
    expect(sentIn(dc.threadId).length).toBe(before);
    expect(requestsFor(stack, "hello thread without a mention")).toEqual([]);
    expect((await slash(member, "settings", { values: { change: "replies mention" } })).text).toBe(
      zh(SETTINGS_TEXT.notAllowed),
    );
    expect((await slash(mod, "settings", { values: { change: "replies mention" }, permissions: ADMIN })).text).toBe(
      zh(SETTINGS_TEXT.repliesSet),
    );
  });
});
