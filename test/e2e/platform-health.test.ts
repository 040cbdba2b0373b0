/**
 * Platform connections and `/health`, end to end: the adapter part (real grammy and discord.js,
 * short retry and health timings) and the worker part against the fake Bot API and the fake
 * Discord gateway, with the adapter part's health server on a free port.
 *
 * - Telegram: another poller (409), a run of 5xx answers and dropped connections, a failure episode
 *   longer than the threshold, a polling loop that is gone;
 * - Discord: a gateway that is down longer than the threshold, then one that closes for good (4004).
 */
import type { Chat, User } from "grammy/types";
import { freePort } from "../helpers/ports.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { TelegramAdapter } from "../../adapters/telegram/index.js";
import type { AdapterFatalError } from "../../src/adapter.js";
import { startStack, type Stack } from "./harness.js";
import { ANSWER_TIMEOUT_MS } from "./scenarios-common.js";

/**
 * Short polling timings. `recoveredAfterMs` stays well above the competing poller's turnaround
 * (its next `getUpdates` 50 ms after its last, all in this process): with 300 ms a loaded machine
 * that let the bot's retry wait that long counted it as recovered in the middle of the conflict,
 * and the next 409 started a second episode (two warnings).
 */
const POLLING = { initialBackoffMs: 100, maxBackoffMs: 400, unhealthyAfterMs: 800, recoveredAfterMs: 2000 };
const GATEWAY = { unhealthyAfterMs: 800 };
const WAIT_MS = 20_000;

let stack: Stack;
let healthUrl: string;
const fatal: AdapterFatalError[] = [];

beforeAll(async () => {
  const port = await freePort();
  healthUrl = `http://127.0.0.1:${port}/health`;
  stack = await startStack({
    healthPort: port,
    adapterOptions: { telegram: { polling: POLLING }, discord: { gateway: GATEWAY } },
    onFatal: (error) => fatal.push(error),
  });
}, 60_000);
afterAll(async () => stack?.stop());

type Health = { status: number; body: { status: string; checks: Record<string, boolean> } };
async function health(): Promise<Health> {
  const res = await fetch(healthUrl);
  return { status: res.status, body: (await res.json()) as Health["body"] };
}

/** Polls `/health` until `check` holds; returns that answer. */
async function healthUntil(check: (h: Health) => boolean, what: string): Promise<Health> {
  const deadline = Date.now() + WAIT_MS;
  for (;;) {
    const h = await health();
    if (check(h)) return h;
    if (Date.now() > deadline) throw new Error(`timed out waiting for /health: ${what} (last: ${JSON.stringify(h)})`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

const allUp = (h: Health) => h.status === 200;

/** Log lines of the adapter part whose message contains `fragment`. */
function logsWith(fragment: string): Record<string, unknown>[] {
  return stack.logs().filter((l) => l.part === "adapter" && String(l.msg).includes(fragment));
}

/** `from` writes `text` to the bot in private; resolves once the bot answered. */
async function askTelegram(from: User, text: string): Promise<void> {
  const tg = stack.telegram;
  const chat: Chat = tg.privateChat(from);
  const before = tg.sent.filter((m) => m.chatId === chat.id).length;
  tg.sendUserMessage({ chat, from, text });
  await tg.waitFor(
    () => tg.sent.filter((m) => m.chatId === chat.id)[before],
    ANSWER_TIMEOUT_MS,
    `an answer to "${text}"`,
  );
}

describe("platform connections and /health", () => {
  it("answers 200 with every check named while Redis, Telegram polling and the Discord gateway are up", async () => {
    expect(await health()).toEqual({
      status: 200,
      body: { status: "ok", checks: { redis: true, telegram: true, discord: true } },
    });
  });

  it("Telegram: another poller (409) turns health to 503 while it lasts; polling resumes, health is back, the next message is answered", async () => {
    const warnedBefore = logsWith("getUpdates failed (").length;
    const competitor = stack.telegram.competingPoller(3000);
    const down = await healthUntil((h) => h.status === 503, "503 during the conflict");
    expect(down.body.checks).toEqual({ redis: true, telegram: false, discord: true });
    await competitor;
    await healthUntil(allUp, "200 after the conflict");
    await askTelegram(stack.telegram.user(97001, "Lin"), "are you back?");
    const warned = logsWith("getUpdates failed (").slice(warnedBefore);
    expect(warned).toHaveLength(1);
    expect(String(warned[0]!.msg)).toContain("409 Conflict");
    expect(logsWith("polling works again").length).toBeGreaterThanOrEqual(1);
  }, 60_000);

  it("Telegram: a run of 5xx answers and dropped connections is retried, logged once, and the message in between is answered", async () => {
    const tg = stack.telegram;
    const warnedBefore = logsWith("getUpdates failed (").length;
    const recoveredBefore = logsWith("polling works again").length;
    for (let i = 0; i < 3; i++) tg.failNext("getUpdates", { error_code: 500, description: "Internal Server Error" });
    tg.dropNext("getUpdates", 2);
    const user = tg.user(97002, "Wu");
    await askTelegram(user, "first, before the errors");
    await tg.waitFor(() => logsWith("polling works again").length > recoveredBefore, WAIT_MS, "the recovery line");
    await askTelegram(user, "second, after the errors");
    expect(logsWith("getUpdates failed (").slice(warnedBefore)).toHaveLength(1);
    expect((await health()).status).toBe(200);
  }, 60_000);

  it("Telegram: an episode longer than the threshold is 503 until polling works again", async () => {
    const tg = stack.telegram;
    // About 4 s of failures with delays capped at 400 ms: well past the 800 ms threshold.
    for (let i = 0; i < 12; i++) tg.failNext("getUpdates", { error_code: 502, description: "Bad Gateway" });
    tg.sendUserMessage({
      chat: tg.privateChat(tg.user(97003, "Chen")),
      from: tg.user(97003, "Chen"),
      text: "wake the poll",
    });
    const down = await healthUntil((h) => h.status === 503, "503 during a long episode");
    expect(down.body.checks.telegram).toBe(false);
    await healthUntil(allUp, "200 once polling works again");
  }, 60_000);

  it("Telegram: a polling loop that is gone is 503", async () => {
    const telegram = stack.adapters.adapters.find((a) => a.platform === "telegram") as TelegramAdapter;
    await telegram.bot.stop();
    const down = await healthUntil((h) => h.status === 503, "503 without a poller");
    expect(down.body.checks).toEqual({ redis: true, telegram: false, discord: true });
    await stack.restartAdapters();
    await healthUntil(allUp, "200 after the adapters restarted");
    await askTelegram(stack.telegram.user(97004, "Hsu"), "after the restart");
  }, 60_000);

  it("Discord: a gateway down longer than the threshold is 503 and logged; resumed, it is 200 again", async () => {
    const dc = stack.discord;
    dc.gatewayDown = true;
    dc.closeGateway(4000, "Unknown error");
    const down = await healthUntil((h) => h.status === 503, "503 while the gateway is down");
    expect(down.body.checks).toEqual({ redis: true, telegram: true, discord: false });
    expect(logsWith("discord: gateway connection lost").length).toBeGreaterThanOrEqual(1);
    dc.gatewayDown = false;
    await healthUntil(allUp, "200 once the gateway is back");
    expect(logsWith("discord: gateway connection is back").length).toBeGreaterThanOrEqual(1);
    expect(fatal).toEqual([]);
  }, 60_000);

  it("Discord: a gateway closed for good (4004, token reset) is reported naming DISCORD_TOKEN and stops the bot", async () => {
    const discord = stack.adapters.adapters.find((a) => a.platform === "discord")!;
    stack.discord.closeGateway(4004, "Authentication failed.");
    await stack.telegram.waitFor(() => fatal.length > 0, WAIT_MS, "the fatal report");
    expect(fatal[0]!.platform).toBe("discord");
    expect(fatal[0]!.message).toContain("DISCORD_TOKEN was rejected by the Discord gateway (close code 4004");
    expect(discord.isConnected!()).toBe(false);
    const line = stack.logs().find((l) => l.level === 60);
    expect(String(line?.msg)).toContain("DISCORD_TOKEN was rejected");
    expect(JSON.stringify(stack.logs())).not.toContain(stack.discord.token);
    // The bot stopped: the health server is closed with it.
    const deadline = Date.now() + WAIT_MS;
    while (
      await fetch(healthUrl).then(
        () => true,
        () => false,
      )
    ) {
      if (Date.now() > deadline) throw new Error("the health server is still answering");
      await new Promise((r) => setTimeout(r, 50));
    }
  }, 60_000);
});
