/**
 * Discord sharding (`DISCORD_SHARD_COUNT`, `DISCORD_SHARDS`) with real discord.js clients against
 * the strict fake gateway, which routes events as Discord does: a guild's to shard
 * `(guild_id >> 22) % shard_count`, DMs to shard 0.
 *
 * Two adapter parts (as two processes would run them) with `DISCORD_SHARDS=0` and `=1` of 2, one
 * worker, a guild on each shard: each part receives only its guilds' events (and the DMs for
 * shard 0), every message is answered once, slash commands are registered once (shard 0's part).
 */
import { Events } from "discord.js";
import { WebSocket } from "ws";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { DiscordAdapter } from "../../adapters/discord/index.js";
import { createAnthropicClient } from "../../src/agent/client.js";
import { runAgent } from "../../src/agent/loop.js";
import { startBot, type RunningBot } from "../../src/app.js";
import { loadTools } from "../../src/toolbox/registry.js";
import type { ToolBox } from "../../src/toolbox/toolbox.js";
import { startFakeAnthropic, type FakeAnthropic } from "../fakes/anthropic.js";
import { FakeDiscord, shardOf } from "../fakes/discord.js";
import { scriptedModel } from "../e2e/scripted-model.js";
import { testConfig } from "../helpers/config.js";
import { captureLogger } from "../helpers/log.js";
import { startRedis, type TestRedis } from "../helpers/redis.js";

/** A guild id on shard 0 of 2 (the fake's own guild, 800000000000000001, is on shard 1). */
const GUILD_ON_SHARD_0 = "800000000003145729";

let redis: TestRedis;
let model: FakeAnthropic;
beforeAll(async () => {
  redis = await startRedis();
  model = await startFakeAnthropic({ fallback: scriptedModel });
}, 30_000);
afterAll(async () => {
  await model?.close();
  await redis?.stop();
});

function envFor(dc: FakeDiscord, extra: Record<string, string> = {}) {
  return testConfig({
    DISCORD_TOKEN: dc.token,
    DISCORD_API_URL: dc.apiUrl,
    DISCORD_GUILD_ID: dc.guildId,
    ANTHROPIC_API_KEY: "fake-shards-anthropic-key-000",
    ANTHROPIC_BASE_URL: model.url,
    REDIS_URL: redis.url,
    ...extra,
  });
}

describe("two adapter processes on two shards", () => {
  let dc: FakeDiscord;
  let toolbox: ToolBox;
  const parts: RunningBot[] = [];
  const lines: string[][] = [];
  let channel0: string;

  async function startPart(extra: Record<string, string>, role: "adapter" | "worker"): Promise<RunningBot> {
    const config = envFor(dc, extra);
    const { log, lines: logged } = captureLogger("info");
    lines.push(logged);
    const bot = await startBot({
      config,
      log,
      redisUrl: redis.url,
      toolbox,
      role,
      prefix: "shards",
      agent: role === "worker" ? { runAgent, client: createAnthropicClient(config, { maxRetries: 1 }) } : undefined,
    });
    parts.push(bot);
    return bot;
  }

  beforeAll(async () => {
    dc = await FakeDiscord.start({ recommendedShards: 2 });
    channel0 = dc.addGuild(GUILD_ON_SHARD_0);
    const { log } = captureLogger("silent");
    toolbox = (await loadTools({ config: envFor(dc), log })).toolbox;
    await startPart({}, "worker");
  }, 60_000);
  afterAll(async () => {
    for (const part of parts.reverse()) await part.stop();
    await dc?.close();
  });

  it("routes by (guild_id >> 22) % shard_count, answers each message once, registers commands once", async () => {
    expect(shardOf(GUILD_ON_SHARD_0, 2)).toBe(0);
    expect(shardOf(dc.guildId, 2)).toBe(1);
    const shard0 = await startPart({ DISCORD_SHARD_COUNT: "2", DISCORD_SHARDS: "0" }, "adapter");
    const shard1 = await startPart({ DISCORD_SHARD_COUNT: "2", DISCORD_SHARDS: "1" }, "adapter");
    expect(dc.readyShards.sort()).toEqual([
      [0, 2],
      [1, 2],
    ]);
    const [a0, a1] = [shard0.adapters[0] as DiscordAdapter, shard1.adapters[0] as DiscordAdapter];
    // Each part knows only the guilds of its shard.
    expect([...a0.client!.guilds.cache.keys()]).toEqual([GUILD_ON_SHARD_0]);
    expect([...a1.client!.guilds.cache.keys()]).toEqual([dc.guildId]);
    const seen: [string[], string[]] = [[], []];
    a0.client!.on(Events.MessageCreate, (m) => void (m.author.bot || seen[0].push(m.id)));
    a1.client!.on(Events.MessageCreate, (m) => void (m.author.bot || seen[1].push(m.id)));

    const alice = { id: "700000000000000011", username: "alice", global_name: "Alice" };
    const inShard0 = dc.sendUserMessage(alice, `<@${dc.bot.id}> calc 20 + 1`, { channelId: channel0 });
    const inShard1 = dc.sendUserMessage(alice, `<@${dc.bot.id}> calc 20 + 2`, { channelId: dc.channelId });
    const dm = dc.sendUserMessage(alice, "calc 20 + 3", { dm: true });
    await dc.waitFor(
      () => ["21", "22", "23"].every((n) => dc.sent.some((m) => m.content.includes(n))),
      20_000,
      "three answers",
    );
    await new Promise((r) => setTimeout(r, 1000)); // a duplicate answer would show up by now
    expect(dc.sent.filter((m) => m.channelId === channel0).map((m) => m.content)).toEqual([
      expect.stringContaining("21"),
    ]);
    expect(dc.sent.filter((m) => m.channelId === dc.channelId).map((m) => m.content)).toEqual([
      expect.stringContaining("22"),
    ]);
    expect(dc.sent.filter((m) => m.channelId === dm.channel_id).map((m) => m.content)).toEqual([
      expect.stringContaining("23"),
    ]);
    // Shard 0's part got its guild's message and the DM; shard 1's part only its guild's.
    expect(seen[0].sort()).toEqual([inShard0.id, dm.id].sort());
    expect(seen[1]).toEqual([inShard1.id]);

    expect(dc.commandRegistrations).toHaveLength(1);
    expect(lines[1]!.some((l) => l.includes("slash commands registered"))).toBe(true);
    expect(lines[2]!.some((l) => l.includes("slash commands are registered by the process that runs shard 0"))).toBe(
      true,
    );
    // /health per process: ready when this process's shards are.
    expect(a0.isConnected()).toBe(true);
    expect(a1.isConnected()).toBe(true);
    await shard1.stop();
    expect(a0.isConnected()).toBe(true);
  }, 60_000);

  it("without DISCORD_SHARD_COUNT one process runs Discord's recommendation (GET /gateway/bot), every shard", async () => {
    const before = dc.identifies.length;
    const all = await startPart({}, "adapter");
    const adapter = all.adapters[0] as DiscordAdapter;
    expect(adapter.client!.options.shards).toEqual([0, 1]);
    expect(adapter.client!.options.shardCount).toBe(2);
    expect(
      dc.identifies
        .slice(before)
        .map((d) => d.shard)
        .sort(),
    ).toEqual([
      [0, 2],
      [1, 2],
    ]);
    expect([...adapter.client!.guilds.cache.keys()].sort()).toEqual([dc.guildId, GUILD_ON_SHARD_0].sort());
    expect(adapter.isConnected()).toBe(true);
  }, 60_000);
});

describe("the fake gateway refuses a bad shard pair", () => {
  let dc: FakeDiscord;
  beforeAll(async () => {
    dc = await FakeDiscord.start();
  });
  afterAll(async () => dc?.close());

  async function identifyWith(shard: unknown): Promise<number> {
    const ws = new WebSocket(`${dc.gatewayUrl}?v=10&encoding=json`);
    return new Promise<number>((resolve, reject) => {
      ws.on("error", reject);
      ws.on("close", (code) => resolve(code));
      ws.on("message", (raw) => {
        const payload = JSON.parse(String(raw)) as { op: number };
        if (payload.op !== 10) return;
        ws.send(
          JSON.stringify({
            op: 2,
            d: { token: dc.token, intents: 1, properties: { os: "linux", browser: "test", device: "test" }, shard },
          }),
        );
      });
    });
  }

  it("closes with 4010 Invalid shard for an id out of range, a negative id, a count of 0, or not a pair", async () => {
    for (const shard of [[2, 2], [-1, 2], [0, 0], [0], "0,1", [0.5, 2]]) expect(await identifyWith(shard)).toBe(4010);
  });
});
