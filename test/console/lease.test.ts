/**
 * One `npm run chat` per conversation on one Redis (adapters/console/lease.ts): the real entry
 * point, several processes with piped stdin on one test Redis and the strict fake Messages API. A
 * second chat on the same conversation exits 1 with one line naming the first one's pid, in the
 * chat's language (zh-TW or English), and a chat whose lease another took says so and exits 1; the demo
 * (its own conversation) runs beside it; the lease is released on exit and left to expire by a
 * chat that was killed. The lease module itself: a renewal that finds another holder reports it.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, expect, it } from "vitest";
import { CHAT_LEASE_TTL_MS, chatLeaseKey, takeChatLease, type ChatLeaseHolder } from "../../adapters/console/index.js";
import { silentLogger } from "../../src/log.js";
import { connectRedis, type RedisClient } from "../../src/redis.js";
import { startFakeAnthropic, text, type FakeAnthropic } from "../fakes/anthropic.js";
import { nodeArgs } from "../helpers/compiled.js";
import { startRedis, type TestRedis } from "../helpers/redis.js";
import { waitFor } from "../worker/harness.js";

let server: TestRedis;
let fake: FakeAnthropic;
let redis: RedisClient;
let cwd: string;
const children: ChildProcess[] = [];
beforeAll(async () => {
  server = await startRedis();
  fake = await startFakeAnthropic();
  redis = connectRedis(server.url);
  cwd = await mkdtemp(path.join(tmpdir(), "bot-lease-"));
});
afterAll(async () => {
  for (const child of children) if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
  redis?.disconnect();
  await fake?.close();
  await server?.stop();
  if (cwd) await rm(cwd, { recursive: true, force: true });
});

/** A chat process on the test Redis with piped stdin; `out` collects stdout and stderr, `exited` its exit code. */
function startChat(args: string[] = [], locale: "en" | "zh-TW" = "en") {
  const child = spawn(process.execPath, nodeArgs("src/cli/chat.ts", ...args), {
    cwd,
    env: {
      PATH: process.env.PATH ?? "",
      REDIS_URL: server.url,
      ANTHROPIC_API_KEY: "test-key",
      ANTHROPIC_BASE_URL: fake.url,
      BOT_LOCALE: locale,
      STREAMING: "off",
    },
    stdio: ["pipe", "pipe", "pipe"],
  });
  children.push(child);
  const chat = {
    child,
    out: "",
    stderr: "",
    exited: new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code))),
  };
  child.stdout!.on("data", (d: Buffer) => (chat.out += d.toString()));
  child.stderr!.on("data", (d: Buffer) => {
    chat.out += d.toString();
    chat.stderr += d.toString();
  });
  return chat;
}

async function until(chat: ReturnType<typeof startChat>, seen: string, timeoutMs = 60_000): Promise<void> {
  try {
    await waitFor(() => chat.out.includes(seen) || chat.child.exitCode !== null, timeoutMs, seen);
  } catch (error) {
    throw new Error(`${(error as Error).message}; the transcript:\n${chat.out}`, { cause: error });
  }
  expect(chat.out).toContain(seen);
}

it(
  "a second npm run chat on one conversation exits 1 naming the first one's pid; the demo " +
    "runs beside it; released on exit, left to expire when killed",
  async () => {
    const key = chatLeaseKey({ platform: "console", chatId: "local" });
    const first = startChat();
    await until(first, "Chat started");
    expect(JSON.parse((await redis.get(key))!)).toMatchObject({ pid: first.child.pid });
    expect(await redis.pttl(key)).toBeGreaterThan(CHAT_LEASE_TTL_MS - 5000);

    // In the chat's language (BOT_LOCALE, as its welcome line): zh-TW, and English.
    const second = startChat([], "zh-TW");
    expect(await second.exited).toBe(1);
    expect(second.stderr).toBe(
      `另一個 npm run chat（pid ${first.child.pid}）正在使用這個對話（local）：請先關閉它；如果它已當掉，請等大約 30 秒再試。\n`,
    );
    expect(second.out).not.toContain("開始對話");
    const english = startChat([], "en");
    expect(await english.exited).toBe(1);
    expect(english.stderr).toBe(
      `Another npm run chat (pid ${first.child.pid}) holds this conversation (local): close it first, or if it crashed, wait about 30 s and try again.\n`,
    );
    expect(english.out).not.toContain("Chat started");

    // The demo is its own conversation: it starts while the first chat runs, and leaves on /quit.
    const demo = startChat(["--demo"]);
    await until(demo, "Chat started");
    demo.child.stdin!.write("/quit\n");
    expect(await demo.exited).toBe(0);

    // The first chat still answers its own messages.
    fake.enqueue(text("still here"));
    first.child.stdin!.write("are you there?\n");
    await until(first, "bot> still here\n");
    first.child.stdin!.write("/quit\n");
    expect(await first.exited).toBe(0);
    expect(await redis.exists(key)).toBe(0);

    // Released: the next chat takes the conversation; killed, it leaves the lease to expire.
    const third = startChat();
    await until(third, "Chat started");
    third.child.kill("SIGKILL");
    await third.exited;
    expect(JSON.parse((await redis.get(key))!)).toMatchObject({ pid: third.child.pid });
    const left = await redis.pttl(key);
    expect(left).toBeGreaterThan(0);
    expect(left).toBeLessThanOrEqual(CHAT_LEASE_TTL_MS);

    // Taken over while it runs (its renewal, every 10 s, finds another holder): it says so in its language and exits 1.
    await redis.del(key);
    const fourth = startChat([], "zh-TW");
    await until(fourth, "開始對話");
    await redis.set(key, JSON.stringify({ pid: 4242, host: "elsewhere", token: "t" }), "PX", CHAT_LEASE_TTL_MS);
    expect(await fourth.exited).toBe(1);
    expect(fourth.out).toContain(
      "另一個 npm run chat（elsewhere 上的 pid 4242）接手了這個對話（local），這裡的對話就此結束。",
    );
    expect(fourth.out).not.toContain("took over");
  },
  180_000,
);

it("a renewal that finds another holder reports it once and stops renewing; release leaves another's lease alone", async () => {
  const chat = { platform: "console" as const, chatId: "renewal" };
  const lost: (ChatLeaseHolder | undefined)[] = [];
  const taken = await takeChatLease(redis, chat, {
    log: silentLogger,
    ttlMs: 2000,
    refreshMs: 50,
    onLost: (holder) => lost.push(holder),
  });
  if (!("lease" in taken)) throw new Error("not taken");
  await new Promise((r) => setTimeout(r, 200));
  expect(await redis.pttl(chatLeaseKey(chat))).toBeGreaterThan(1800); // renewed
  const other = { pid: 4242, host: "elsewhere", token: "t" };
  await redis.set(chatLeaseKey(chat), JSON.stringify(other), "PX", 2000);
  await waitFor(() => lost.length === 1, 5000, "the lost lease reported");
  await new Promise((r) => setTimeout(r, 200));
  expect(lost).toEqual([other]);
  await taken.lease.release();
  expect(JSON.parse((await redis.get(chatLeaseKey(chat)))!)).toEqual(other);
  expect(await takeChatLease(redis, chat, { log: silentLogger })).toEqual({ heldBy: other });
});
