/**
 * Issue 13 end to end on Discord with `ACCESS_POLICY=allowlist`: the real discord.js adapter and
 * the worker against the fake Discord REST + gateway and the strict fake Messages API, a real
 * Redis. Strangers, a server channel that is not enabled, slash commands by admins and members,
 * the rate limit (`RATE_LIMIT_PER_MINUTE=10`) and the queue cap (`MAX_QUEUED_PER_CHAT=3`).
 */
import { describe, expect, it } from "vitest";
import { FakeDiscord, type FakeUser, type SentMessage } from "../fakes/discord.js";
import { itOneRedis } from "../helpers/cluster.js";
import { useStack, type Stack } from "./harness.js";
import { ANSWER_TIMEOUT_MS, modelSaw, QUIET_WINDOW_MS } from "./scenarios-common.js";

const user = (n: number, name: string): FakeUser => ({
  id: `72000000000000${String(n).padStart(4, "0")}`,
  username: name.toLowerCase(),
  global_name: name,
});
const ADMIN = user(1, "Owner");
const ALICE = user(2, "Alice");
const BOB = user(3, "Bob");
const CAROL = user(4, "Carol");

let stack: Stack;
useStack(
  {
    env: {
      ACCESS_POLICY: "allowlist",
      ADMIN_USERS: `discord:${ADMIN.id}`,
      ALLOWED_USERS: [ALICE, BOB, CAROL].map((u) => `discord:${u.id}`).join(","),
      RATE_LIMIT_PER_MINUTE: "10",
      MAX_QUEUED_PER_CHAT: "3",
      USER_DAILY_TOKENS: "0",
      // Never compacts: a background summary request would change the model request counts asserted below.
      COMPACT_AT_TOKENS: "10000000",
    },
  },
  (started) => (stack = started),
);

const sentIn = (channelId: string): SentMessage[] => stack.discord.messagesIn(channelId);

/** `author` writes `content` (a DM unless `channelId`); resolves with the bot's next message there. */
async function ask(author: FakeUser, content: string, channelId?: string): Promise<SentMessage> {
  return (await stack.discord.ask(author, content, channelId ? { channelId } : { dm: true }, ANSWER_TIMEOUT_MS)).answer;
}

async function silent(author: FakeUser, content: string, channelId?: string): Promise<void> {
  const dc = stack.discord;
  const where = channelId ?? dc.dmChannel(author);
  const before = sentIn(where).length;
  dc.sendUserMessage(author, content, channelId ? { channelId } : { dm: true });
  await new Promise((r) => setTimeout(r, QUIET_WINDOW_MS));
  expect(sentIn(where).slice(before)).toEqual([]);
}

/** Runs a slash command; resolves with the (ephemeral) reply text. */
async function slash(
  author: FakeUser,
  name: string,
  options: Parameters<FakeDiscord["slashCommand"]>[2] = {},
): Promise<string> {
  const i = stack.discord.slashCommand(author, name, options);
  const res = await stack.discord.waitFor(() => i.response, ANSWER_TIMEOUT_MS, `/${name} answered`);
  if (res.type === 5) return String((await stack.discord.waitFor(() => i.edits[0], ANSWER_TIMEOUT_MS)).content);
  return String(res.data?.content);
}

describe("allowlist on Discord", () => {
  itOneRedis(
    "a stranger's DM gets one 'this bot is private' answer (once a day) and nothing reaches the model",
    async () => {
      const stranger = user(100, "Stranger");
      const requests = stack.model.requests.length;
      // Written in Latin letters (Discord does not tell the app's language): answered in English.
      expect((await ask(stranger, "calc 1 + 2 private-please")).content).toContain("Sorry, this is a private bot");
      await silent(stranger, "calc 1 + 3 anyone-there");
      expect(stack.model.requests.length).toBe(requests);
      expect(modelSaw(stack, "private-please")).toBe(false);
      expect(modelSaw(stack, "anyone-there")).toBe(false);
      // A slash command must be answered: the stranger sees the same "private" note, only they see it.
      expect(await slash(stranger, "usage", { dm: true })).toContain("私人機器人");
    },
  );

  itOneRedis(
    "a server channel not enabled stays silent to mentions (one note a day); /enable by an " +
      "admin makes it answer; a member's /enable and /reset are refused",
    async () => {
      const dc = stack.discord;
      const mention = `<@${dc.bot.id}>`;
      const channel = dc.channelId;
      const note = await ask(ALICE, `${mention} calc 4 * 4`, channel);
      expect(note.content).toContain("/enable");
      await silent(ALICE, `${mention} calc 4 * 5`, channel);
      expect(modelSaw(stack, "calc 4 *")).toBe(false);

      expect(await slash(ALICE, "enable")).toContain("只有機器人管理員");
      await silent(ALICE, `${mention} calc 4 * 6`, channel);
      expect(await slash(ADMIN, "enable")).toContain("已在這裡啟用");
      expect((await ask(ALICE, `${mention} calc 4 * 7`, channel)).content).toContain("28");

      expect(await slash(ALICE, "reset")).toContain("只有群組管理員");
      expect(await slash(ALICE, "reset", { permissions: FakeDiscord.MANAGE_MESSAGES_PERMISSIONS })).toContain("忘掉");
      expect(await slash(ADMIN, "disable")).toContain("已在這裡停用");
      await silent(ALICE, `${mention} calc 4 * 8`, channel);
      expect(modelSaw(stack, "calc 4 * 8")).toBe(false);
    },
  );

  it("rate limit: the 11th message in a minute gets the slow-down answer and no model request", async () => {
    for (let n = 1; n <= 10; n += 1) expect((await ask(CAROL, `calc ${n} * 100`)).content).toContain(String(n * 100));
    const requests = stack.model.requests.length;
    const slow = await ask(CAROL, "calc 11 * 100");
    expect(slow.content).toMatch(/^訊息太快了，請 \d+ 秒後再試。$/);
    const seconds = Number(/(\d+) 秒/.exec(slow.content)![1]);
    expect(seconds).toBeGreaterThan(0);
    expect(seconds).toBeLessThanOrEqual(60);
    // One slow-down answer per window: the 12th is dropped without a word.
    await silent(CAROL, "calc 12 * 100");
    expect(stack.model.requests.length).toBe(requests);
    expect(modelSaw(stack, "calc 11 * 100")).toBe(false);
    expect(modelSaw(stack, "calc 12 * 100")).toBe(false);
  });

  it("queue cap: a chat holding 3 unanswered messages answers the 4th 'busy' and does not queue it", async () => {
    await stack.worker.stop(); // nothing is answered meanwhile: the messages wait in the chat's inbox
    const dm = stack.discord.dmChannel(BOB);
    for (const n of [1, 2, 3]) stack.discord.sendUserMessage(BOB, `calc ${n} * 1000`, { dm: true });
    await new Promise((r) => setTimeout(r, QUIET_WINDOW_MS));
    expect(sentIn(dm)).toEqual([]);
    const busy = await ask(BOB, "calc 4 * 1000");
    expect(busy.content).toContain("我還在處理這個聊天的訊息");
    await stack.restartWorker();
    await stack.discord.waitFor(() => sentIn(dm).length === 4, ANSWER_TIMEOUT_MS, "the three queued answers");
    expect(
      sentIn(dm)
        .slice(1)
        .map((m) => m.content),
    ).toEqual(["calculate: 1 * 1000 = 1000", "calculate: 2 * 1000 = 2000", "calculate: 3 * 1000 = 3000"]);
    expect(modelSaw(stack, "calc 4 * 1000")).toBe(false);
  });
});
