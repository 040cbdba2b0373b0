/**
 * Long polling through real grammy against the strict fake Bot API: a 409 (another poller), a run
 * of 5xx and network errors, a revoked token, and a stop during start-up.
 */
import { createServer, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { AdapterFatalError, type AdapterContext } from "../../src/adapter.js";
import { silentLogger } from "../../src/log.js";
import { createAdapter, type TelegramAdapter } from "../../adapters/telegram/index.js";
import { FakeTelegram } from "../fakes/telegram.js";
import { testAdapterParts, testCommands } from "../helpers/commands.js";
import { testConfig } from "../helpers/config.js";
import { captureLogger } from "../helpers/log.js";
import { MapDecider, startHarness, testToolbox, type Harness } from "./harness.js";

/** Short timings so an episode is seen within a test; the behaviour is the same as with the defaults. */
const POLLING = { initialBackoffMs: 100, maxBackoffMs: 400, unhealthyAfterMs: 800, recoveredAfterMs: 300 };

let h: Harness | undefined;
afterEach(async () => {
  await h?.stop();
  h = undefined;
});

type Line = { level: number; msg: string } & Record<string, unknown>;
const parse = (lines: string[]) => lines.map((l) => JSON.parse(l) as Line);

describe("telegram long polling", () => {
  it("survives another poller with the same token (409): one warning, one recovery line, unhealthy meanwhile, then answers again", async () => {
    const { log, lines } = captureLogger("debug");
    h = await startHarness({}, undefined, log, { polling: POLLING });
    const { tg, adapter } = h;
    expect(adapter.isConnected()).toBe(true);

    const competitor = tg.competingPoller(3000);
    await tg.waitFor(() => !adapter.isConnected(), 10_000, "health to turn false during the conflict");
    await competitor;
    await tg.waitFor(() => adapter.isConnected(), 10_000, "health to come back after the conflict");
    await tg.waitFor(
      () => parse(lines).some((l) => l.msg.includes("polling works again")),
      10_000,
      "the recovery line",
    );

    const ann = tg.user(51, "Ann");
    tg.sendUserMessage({ chat: tg.privateChat(ann), from: ann, text: "still there?" });
    await tg.waitFor(() => h!.queued.find((m) => m.text === "still there?"), 10_000, "the next message to be queued");

    const logged = parse(lines);
    const warnings = logged.filter((l) => l.level === 40 && l.msg.includes("getUpdates failed"));
    expect(warnings).toHaveLength(1);
    expect(warnings[0]!.msg).toContain("409 Conflict: terminated by other getUpdates request");
    expect(warnings[0]!.msg).toContain("another process is polling with this TELEGRAM_BOT_TOKEN");
    expect(logged.filter((l) => l.msg.includes("polling works again"))).toHaveLength(1);
    expect(logged.filter((l) => l.level >= 50)).toEqual([]);
    expect(lines.join("\n")).not.toContain(tg.token);
    expect(h.fatal).toEqual([]);
  }, 30_000);

  it("retries a run of 5xx answers and dropped connections with a growing delay, logging the episode once", async () => {
    const { log, lines } = captureLogger("debug");
    h = await startHarness({}, undefined, log, { polling: POLLING });
    const { tg, adapter } = h;
    for (let i = 0; i < 3; i++) tg.failNext("getUpdates", { error_code: 502, description: "Bad Gateway" });
    tg.dropNext("getUpdates", 2);
    const bob = tg.user(52, "Bob");
    // Wakes the held poll; the next five calls fail, then polling works again.
    tg.sendUserMessage({ chat: tg.privateChat(bob), from: bob, text: "first" });
    await tg.waitFor(
      () => parse(lines).some((l) => l.msg.includes("polling works again")),
      15_000,
      "the recovery line",
    );
    tg.sendUserMessage({ chat: tg.privateChat(bob), from: bob, text: "second" });
    await tg.waitFor(() => h!.queued.some((m) => m.text === "second"), 10_000, "the message after the errors");
    expect(h.queued.map((m) => m.text)).toEqual(["first", "second"]);

    const logged = parse(lines);
    expect(logged.filter((l) => l.level === 40 && l.msg.includes("getUpdates failed"))).toHaveLength(1);
    // The fake drops the connections first, then answers 502.
    expect(logged.filter((l) => l.level === 40)[0]!.msg).toContain("network error");
    const again = logged.filter((l) => l.msg.includes("getUpdates failed again"));
    expect(again.length).toBe(4);
    expect(again.some((l) => l.reason === "502 Bad Gateway")).toBe(true);
    expect(logged.find((l) => l.msg.includes("polling works again"))).toMatchObject({ failedCalls: 5 });
    // The delays grew: at least 100, 200, 400, 400 ms between the five failures.
    const failures = logged.filter((l) => l.msg.includes("getUpdates failed")).map((l) => Number(l.time));
    const gaps = failures.slice(1).map((t, i) => t - failures[i]!);
    expect(gaps[0]).toBeGreaterThanOrEqual(95);
    expect(gaps[1]).toBeGreaterThanOrEqual(195);
    expect(gaps[2]).toBeGreaterThanOrEqual(395);
    expect(gaps[3]).toBeGreaterThanOrEqual(395);
    expect(adapter.isConnected()).toBe(true);
    expect(h.fatal).toEqual([]);
  }, 30_000);

  it("stops for good on a revoked token (401), reporting it as fatal with TELEGRAM_BOT_TOKEN named and the token never logged", async () => {
    const { log, lines } = captureLogger("debug");
    h = await startHarness({}, undefined, log, { polling: POLLING });
    const { tg, adapter } = h;
    tg.revokeToken();
    await tg.waitFor(() => h!.fatal.length > 0, 10_000, "the fatal report");
    expect(h.fatal[0]).toBeInstanceOf(AdapterFatalError);
    expect(h.fatal[0]!.message).toMatch(
      /^TELEGRAM_BOT_TOKEN was rejected by the Telegram Bot API \(401 Unauthorized\)/,
    );
    expect(adapter.isConnected()).toBe(false);
    // Reported once, to the core (which logs it: see startup.test.ts); no error line of its own.
    await new Promise((r) => setTimeout(r, 300));
    expect(h.fatal).toHaveLength(1);
    expect(parse(lines).filter((l) => l.level >= 50)).toEqual([]);
    expect(lines.join("\n")).not.toContain(tg.token);
  }, 30_000);

  it("refuses to start with a token the Bot API rejects (401 on getMe), naming TELEGRAM_BOT_TOKEN", async () => {
    const tg = await FakeTelegram.start();
    try {
      const other = `${tg.token.slice(0, -4)}zzzz`;
      const adapter = createAdapter(
        testConfig({ TELEGRAM_BOT_TOKEN: other, TELEGRAM_API_ROOT: tg.apiRoot }),
        silentLogger,
      ) as TelegramAdapter;
      const error = await adapter.start(context()).then(
        () => undefined,
        (e: unknown) => e,
      );
      await adapter.stop();
      expect(error).toBeInstanceOf(AdapterFatalError);
      expect((error as Error).message).toContain(
        "TELEGRAM_BOT_TOKEN was rejected by the Telegram Bot API (401 Unauthorized)",
      );
      expect((error as Error).message).not.toContain(other);
      expect(tg.callsOf("getUpdates")).toHaveLength(0);
    } finally {
      await tg.stop();
    }
  });

  it("ends a start-up stuck on getMe as soon as stop() is called", async () => {
    // A Bot API that accepts connections and never answers.
    const held: ServerResponse[] = [];
    const silent: Server = createServer((_req, res) => void held.push(res));
    await new Promise<void>((r) => silent.listen(0, "127.0.0.1", r));
    const root = `http://127.0.0.1:${(silent.address() as AddressInfo).port}`;
    try {
      const adapter = createAdapter(
        testConfig({ TELEGRAM_BOT_TOKEN: "900000002:test-token-never-answered", TELEGRAM_API_ROOT: root }),
        silentLogger,
      ) as TelegramAdapter;
      const starting = adapter.start(context()).then(
        () => "started",
        (e: unknown) => (e as Error).message,
      );
      await new Promise((r) => setTimeout(r, 300));
      const before = Date.now();
      await adapter.stop();
      expect(await starting).toBe("telegram: start-up was stopped");
      expect(Date.now() - before).toBeLessThan(2000);
    } finally {
      silent.closeAllConnections();
      await new Promise((r) => silent.close(r));
    }
  });
});

function context(): AdapterContext {
  const commands = testCommands(testConfig(), { toolboxFor: () => testToolbox, resetConversation: async () => [] });
  return {
    config: testConfig(),
    log: silentLogger,
    enqueue: async () => {},
    resetConversation: async () => [],
    toolboxFor: () => testToolbox,
    commands,
    ...testAdapterParts(testConfig(), new MapDecider(), commands),
  };
}
