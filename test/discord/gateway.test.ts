/**
 * The fake gateway speaks the real protocol, and the adapter reports a bad token.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { fakeDiscordToken } from "../helpers/fake-tokens.js";
import { WebSocket } from "ws";
import { createAdapter } from "../../adapters/discord/index.js";
import { silentLogger } from "../../src/log.js";
import { FakeDiscord } from "../fakes/discord.js";
import { ToolBox } from "../../src/toolbox/toolbox.js";
import { testCommands } from "../helpers/commands.js";
import { testConfig } from "../helpers/config.js";
import { startHarness } from "./harness.js";

let fake: FakeDiscord;
beforeAll(async () => {
  fake = await FakeDiscord.start({ heartbeatIntervalMs: 100 });
});
afterAll(async () => {
  await fake?.close();
});

interface Frame {
  op: number;
  t: string | null;
  s: number | null;
  d: Record<string, unknown>;
}

function connect(query = "?v=10&encoding=json") {
  const ws = new WebSocket(`${fake.gatewayUrl}${query}`);
  const frames: Frame[] = [];
  const closed = new Promise<number>((resolve) => ws.on("close", (code) => resolve(code)));
  ws.on("message", (raw) => frames.push(JSON.parse(String(raw)) as Frame));
  const next = (pred: (f: Frame) => boolean) => fake.waitFor(() => frames.find(pred), 2000, "gateway frame");
  return { ws, frames, closed, next };
}

const identify = (token: string, intents = 1 | (1 << 9)) =>
  JSON.stringify({ op: 2, d: { token, intents, properties: { os: "linux", browser: "test", device: "test" } } });

describe("fake gateway", () => {
  it("HELLO, IDENTIFY → READY (resume_gateway_url, unavailable guilds) → GUILD_CREATE, heartbeat → ACK, sequence numbers", async () => {
    const c = connect();
    const hello = await c.next((f) => f.op === 10);
    expect(hello.d.heartbeat_interval).toBe(100);
    c.ws.send(identify(fake.token));
    const ready = await c.next((f) => f.t === "READY");
    expect(ready).toMatchObject({
      op: 0,
      s: 1,
      d: {
        resume_gateway_url: fake.gatewayUrl,
        user: { id: fake.bot.id },
        guilds: [{ id: fake.guildId, unavailable: true }],
        application: { id: fake.applicationId },
      },
    });
    expect(typeof ready.d.session_id).toBe("string");
    const guild = await c.next((f) => f.t === "GUILD_CREATE");
    expect(guild.s).toBe(2);
    c.ws.send(JSON.stringify({ op: 1, d: 2 }));
    await c.next((f) => f.op === 11);
    fake.sendUserMessage({ id: "700000000000000001", username: "alice" }, "hi");
    expect((await c.next((f) => f.t === "MESSAGE_CREATE")).s).toBe(3);
    c.ws.close();
  });

  it("closes 4004 on a wrong token, 4014 on a privileged intent not enabled, 4012 on a wrong version", async () => {
    const a = connect();
    await a.next((f) => f.op === 10);
    a.ws.send(identify("wrong"));
    expect(await a.closed).toBe(4004);

    const strict = await FakeDiscord.start({ privilegedIntents: 0 });
    try {
      const ws = new WebSocket(`${strict.gatewayUrl}?v=10&encoding=json`);
      const closed = new Promise<number>((resolve) => ws.on("close", (code) => resolve(code)));
      ws.on("message", () => ws.send(identify(strict.token, 1 | (1 << 15))));
      expect(await closed).toBe(4014);
    } finally {
      await strict.close();
    }

    const v = connect("?v=9&encoding=json");
    expect(await v.closed).toBe(4012);
  });

  it("the real client heartbeats and gets ACKs", async () => {
    const h = await startHarness({ fake: { heartbeatIntervalMs: 150 } });
    try {
      await h.fake.waitFor(() => h.fake.heartbeats >= 2, 3000, "two heartbeats");
    } finally {
      await h.stop();
    }
  });

  it("a clean stop logs no lost gateway connection (discord.js reports its own close as reconnecting)", async () => {
    const h = await startHarness();
    try {
      await h.adapter.stop();
      await new Promise((r) => setTimeout(r, 200));
      expect(h.logLines().filter((l) => String(l.msg).includes("gateway connection lost"))).toEqual([]);
    } finally {
      await h.stop();
    }
  });

  it("the real client resumes after a RECONNECT and keeps receiving messages", async () => {
    const h = await startHarness();
    try {
      h.fake.requestReconnect();
      await h.fake.waitFor(() => h.fake.resumes === 1 && h.fake.readySessions === 1, 5000, "resumed");
      expect(h.fake.identifies).toHaveLength(1);
      const m = h.fake.sendUserMessage({ id: "700000000000000001", username: "alice" }, "still there?", { dm: true });
      await h.fake.waitFor(() => h.enqueued.find((e) => e.messageId === m.id), 5000, "queued after resume");
    } finally {
      await h.stop();
    }
  });

  it("registers global commands without DISCORD_GUILD_ID; a too-late interaction (10062) is logged, not thrown", async () => {
    const h = await startHarness({ env: { DISCORD_GUILD_ID: "" }, fake: { interactionWindowMs: -1 } });
    try {
      expect(h.fake.commandRegistrations.map((r) => r.scope)).toEqual(["global"]);
      h.fake.slashCommand({ id: "700000000000000001", username: "alice" }, "help");
      const warn = await h.fake.waitFor(
        () => h.logLines().find((l) => String(l.msg).includes("could not be answered")),
        3000,
        "warn logged",
      );
      expect(warn).toMatchObject({ level: 40, code: 10062 });
    } finally {
      await h.stop();
    }
  });

  it("explains how to enable the Message Content intent when the gateway refuses it (4014)", async () => {
    const strict = await FakeDiscord.start({ privilegedIntents: 0 });
    try {
      const adapter = createAdapter(
        testConfig({ DISCORD_TOKEN: strict.token, DISCORD_API_URL: strict.apiUrl }),
        silentLogger,
      );
      const ctx = {
        config: testConfig(),
        log: silentLogger,
        enqueue: async () => {},
        resetConversation: async () => [],
        toolboxFor: () => {
          throw new Error("unused");
        },
        commands: testCommands(testConfig(), { toolboxFor: () => new ToolBox([]), resetConversation: async () => [] }),
        decide: async () => ({ status: "not_found" as const }),
        press: async () => ({ kind: "unknown", notice: "" }),
        repliesToAll: async () => false,
      };
      await expect(adapter.start(ctx)).rejects.toThrow(/Privileged Gateway Intents → Message Content Intent/);
      await adapter.stop();
    } finally {
      await strict.close();
    }
  });

  it("stop() during start-up (gateway never ready) ends start-up at once", async () => {
    const down = await FakeDiscord.start({ heartbeatIntervalMs: 100 });
    down.gatewayDown = true;
    try {
      const adapter = createAdapter(
        testConfig({ DISCORD_TOKEN: down.token, DISCORD_API_URL: down.apiUrl }),
        silentLogger,
      );
      const ctx = {
        config: testConfig(),
        log: silentLogger,
        enqueue: async () => {},
        resetConversation: async () => [],
        toolboxFor: () => {
          throw new Error("unused");
        },
        commands: testCommands(testConfig(), { toolboxFor: () => new ToolBox([]), resetConversation: async () => [] }),
        decide: async () => ({ status: "not_found" as const }),
        press: async () => ({ kind: "unknown", notice: "" }),
        repliesToAll: async () => false,
      };
      const starting = adapter.start(ctx).then(
        () => "started",
        (e: unknown) => (e as Error).message,
      );
      await new Promise((r) => setTimeout(r, 500));
      const before = Date.now();
      await adapter.stop();
      expect(await starting).toBe("discord: start-up was stopped");
      expect(Date.now() - before).toBeLessThan(3000);
      expect(adapter.isConnected!()).toBe(false);
    } finally {
      await down.close();
    }
  });

  it("an adapter with a wrong token fails to start with the token kept out of the error", async () => {
    const adapter = createAdapter(
      testConfig({ DISCORD_TOKEN: fakeDiscordToken().replace("fake00", "wrong1"), DISCORD_API_URL: fake.apiUrl }),
      silentLogger,
    );
    const ctx = {
      config: testConfig(),
      log: silentLogger,
      enqueue: async () => {},
      resetConversation: async () => [],
      toolboxFor: () => {
        throw new Error("unused");
      },
      commands: testCommands(testConfig(), { toolboxFor: () => new ToolBox([]), resetConversation: async () => [] }),
      decide: async () => ({ status: "not_found" as const }),
      press: async () => ({ kind: "unknown", notice: "" }),
      repliesToAll: async () => false,
    };
    const error = await adapter.start(ctx).catch((e: unknown) => e as Error);
    expect(error).toBeInstanceOf(Error);
    expect(String(error)).not.toContain("abcdefghijklmnopqrstuvwxyz1");
    await adapter.stop();
  });
});
