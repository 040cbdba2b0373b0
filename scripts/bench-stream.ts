/**
 * `npm run bench:stream`: what streaming costs and gives, per platform.
 *
 * The whole bot (`startBot`, role `all`: the real grammy and discord.js adapters, queue, worker,
 * history, agent loop and SDK client) runs against a real Redis, the fake Bot API, the fake Discord
 * and the strict fake Messages API, which streams a 1,500-character Markdown answer over 6 s: the
 * first token 800 ms after the request, the rest in 10-character `text_delta`s spread evenly until
 * 6 s (`BENCH_STREAM_TOTAL_MS`, `BENCH_STREAM_FIRST_MS`). The same question is asked in a Telegram
 * private chat (drafts), a Telegram group and a Discord guild channel (a posted reply then edits),
 * with `STREAMING=on` (`STREAM_EDIT_INTERVAL_MS` default 1000) and then with `STREAMING=off`.
 *
 * Figures per platform:
 * - added latency: from the moment the fake model wrote its first token to the moment the fake
 *   platform received the first visible text (goal < 300 ms);
 * - updates: drafts or edits of the live message, plus 429s answered by the fake (goal: at most one
 *   per second, plus one per extra message);
 * - first visible text and complete answer after the question, streamed vs. not;
 * - the final text byte for byte: the streamed answer's final message(s) against the non-streamed
 *   answer's (Telegram: the HTML sent and the text and entities Telegram stores; Discord: content).
 *
 * Then Stop (issue 42), with the adapters and the worker as two bots on one Redis (roles `adapter`
 * and `worker`, as two processes would run them): the fake model streams the answer up to its
 * 100th character and holds there (injected pacing: it would never end by itself), the asker presses
 * the live answer's Stop button (Telegram group, Discord channel) or sends `/stop` (Telegram), and
 * the bench prints, over `BENCH_STOP_PRESSES` presses each (default 5): press → the model stream's
 * end (the fake sees the connection close; goal < 1 s) and press → the stopped answer's final edit.
 */
import { createAnthropicClient } from "../src/agent/client.js";
import { runAgent } from "../src/agent/loop.js";
import { startBot, type RunningBot } from "../src/app.js";
import { loadConfig, type Config } from "../src/config.js";
import { silentLogger } from "../src/log.js";
import { ToolBox } from "../src/toolbox/toolbox.js";
import { startFakeAnthropic, text, type FakeAnthropic } from "../test/fakes/anthropic.js";
import { FakeDiscord } from "../test/fakes/discord.js";
import { fakesEnv } from "../test/fakes/env.js";
import { FakeTelegram } from "../test/fakes/telegram.js";
import { startRedis } from "../test/helpers/redis.js";
import { eventually } from "../test/e2e/reminders-helpers.js";

/** How long a bench step waits for the platform, in ms. */
const STEP_TIMEOUT_MS = 60_000;

const FIRST_MS = Number(process.env.BENCH_STREAM_FIRST_MS ?? 800);
const TOTAL_MS = Number(process.env.BENCH_STREAM_TOTAL_MS ?? 6000);
const INTERVAL = process.env.STREAM_EDIT_INTERVAL_MS ?? "1000";

/** A 1,500-character Markdown answer (UTF-16 units), with bold, a list and a code block. */
function answerText(): string {
  const parts = [
    "**臺北市**今天的天氣概況如下，整理給你參考：",
    "",
    "- 氣溫：22 到 28 度，早晚稍涼",
    "- 降雨機率：午後 30%",
    "- 紫外線：高，外出請防曬",
    "",
    "```",
    "時段    天氣      溫度",
    "上午    晴        24",
    "下午    多雲陣雨  28",
    "```",
    "",
  ];
  let body = parts.join("\n");
  const filler = "出門記得帶把傘，也多喝水；傍晚以後風會變大，騎車的朋友請多注意安全。";
  while (body.length + filler.length + 1 <= 1500) body += `${filler}\n`;
  return (body + "祝你有美好的一天！".repeat(40)).slice(0, 1500).trimEnd() + "。";
}

interface Run {
  /** ms from the question to the first visible text. */
  firstVisibleMs: number;
  /** ms from the model's first token to the first visible text (streamed runs). */
  addedMs: number | undefined;
  /** ms from the question to the complete answer. */
  completeMs: number;
  /** Drafts or edits of the live message(s). */
  updates: number;
  /** 429s the platform answered during the run. */
  rateLimited: number;
  /** Messages of the final answer. */
  messages: number;
  /** The final answer as the platform stores and shows it (compared byte for byte). */
  final: string;
}

/** The fakes, the Redis and the configuration one bench run's bot is started with. */
interface BenchFakes {
  redis: Awaited<ReturnType<typeof startRedis>>;
  model: FakeAnthropic;
  telegram: FakeTelegram;
  discord: FakeDiscord;
  config: Config;
  /** Stops the fakes, then Redis (stop the bot first). */
  stop(): Promise<void>;
}

/** Starts Redis, the fake Messages API, Telegram and Discord, and the configuration pointing at them. */
async function startFakes(streaming: "on" | "off"): Promise<BenchFakes> {
  const redis = await startRedis();
  const model = await startFakeAnthropic();
  const telegram = await FakeTelegram.start();
  const discord = await FakeDiscord.start();
  const config = loadConfig(
    {
      LOG_LEVEL: "silent",
      ACCESS_POLICY: "open",
      RATE_LIMIT_PER_MINUTE: "10000",
      USER_DAILY_TOKENS: "0",
      STREAMING: streaming,
      STREAM_EDIT_INTERVAL_MS: INTERVAL,
      ...fakesEnv({ model, telegram, discord }, "bench-stream-key-000000"),
      REDIS_URL: redis.url,
    },
    { purpose: "inspect" },
  );
  const stop = async () => {
    await Promise.all([model.close(), telegram.stop(), discord.close()]);
    await redis.stop();
  };
  return { redis, model, telegram, discord, config, stop };
}

async function runAll(streaming: "on" | "off"): Promise<Record<string, Run>> {
  const fakes = await startFakes(streaming);
  const { redis, model, telegram, discord, config } = fakes;
  const bot: RunningBot = await startBot({
    config,
    log: silentLogger,
    redisUrl: redis.url,
    toolbox: new ToolBox([]),
    role: "all",
    agent: { runAgent, client: createAnthropicClient(config, { maxRetries: 0 }) },
    prefix: "bench",
  });
  const answer = answerText();
  const chunks = Math.max(1, Math.ceil([...answer].length / 10));
  const pace = {
    firstTokenMs: FIRST_MS,
    totalMs: TOTAL_MS - FIRST_MS,
    chunkChars: Math.ceil([...answer].length / chunks),
  };
  const runs: Record<string, Run> = {};
  try {
    // Telegram private chat
    {
      const user = telegram.user(880001, "Bench");
      const chat = telegram.privateChat(user);
      model.enqueue({ ...text(answer), stream: pace });
      const askedAt = Date.now();
      const answered = model.answered.length;
      telegram.sendUserMessage({ chat, from: user, text: "今天天氣如何？" });
      const final = await eventually(
        async () => telegram.sent.find((m) => m.chatId === chat.id),
        "the Telegram private answer",
        STEP_TIMEOUT_MS,
      );
      const drafts = telegram.drafts.filter((d) => d.chatId === chat.id);
      const firstAt = drafts[0]?.at ?? final.at;
      const token = model.answered[answered]?.firstTokenAt;
      runs["Telegram private (drafts)"] = {
        firstVisibleMs: firstAt - askedAt,
        addedMs: token !== undefined && drafts.length > 0 ? firstAt - token : undefined,
        completeMs: final.at - askedAt,
        updates: drafts.length,
        rateLimited: 0,
        messages: telegram.sent.filter((m) => m.chatId === chat.id).length,
        final: JSON.stringify({ html: final.payload.text, text: final.text, entities: final.entities }),
      };
    }
    // Telegram group
    {
      const user = telegram.user(880002, "Bench");
      const group = telegram.group(-1008800002, "Bench group");
      model.enqueue({ ...text(answer), stream: pace });
      const askedAt = Date.now();
      const answered = model.answered.length;
      telegram.sendUserMessage({ chat: group, from: user, text: `@${telegram.bot.username} 今天天氣如何？` });
      const first = await eventually(
        async () => telegram.sent.find((m) => m.chatId === group.id),
        "the Telegram group answer",
        STEP_TIMEOUT_MS,
      );
      // Complete: the last edit is the formatted one (HTML), or the message was sent formatted at once.
      const done = () =>
        first.payload.parse_mode === "HTML" ||
        telegram.edits.some((e) => Number(e.payload.message_id) === first.messageId && e.payload.parse_mode === "HTML");
      await eventually(async () => done(), "the Telegram group answer formatted", STEP_TIMEOUT_MS);
      const edits = telegram.edits.filter(
        (e) => Number(e.payload.chat_id) === group.id && e.method === "editMessageText",
      );
      const last = edits.at(-1);
      const token = model.answered[answered]?.firstTokenAt;
      runs["Telegram group (edits)"] = {
        firstVisibleMs: first.at - askedAt,
        addedMs: streaming === "on" && token !== undefined ? first.at - token : undefined,
        completeMs: (last?.at ?? first.at) - askedAt,
        updates: edits.length,
        rateLimited:
          telegram.calls.filter((c) => c.at >= askedAt && c.method === "editMessageText").length - edits.length,
        messages: telegram.sent.filter((m) => m.chatId === group.id).length,
        final: JSON.stringify({
          html: last?.payload.text ?? first.payload.text,
          text: first.text,
          entities: first.entities,
        }),
      };
    }
    // Discord guild channel
    {
      const user = { id: "780000000000000001", username: "bench", global_name: "Bench" };
      const channelId = discord.channelId;
      model.enqueue({ ...text(answer), stream: pace });
      const askedAt = Date.now();
      const answered = model.answered.length;
      discord.sendUserMessage(user, `<@${discord.bot.id}> 今天天氣如何？`, { channelId });
      const first = await eventually(
        async () => discord.sent.find((m) => m.channelId === channelId && m.at >= askedAt),
        "the Discord answer",
        STEP_TIMEOUT_MS,
      );
      const target = answer.length <= 2000 ? answer : undefined;
      await eventually(
        async () =>
          (target === undefined || String(first.message.content) === target) &&
          (streaming === "off" || discord.edits.some((e) => e.messageId === first.id && e.payload.content === target)),
        "the Discord answer complete",
        STEP_TIMEOUT_MS,
      );
      const edits = discord.edits.filter((e) => e.messageId === first.id);
      const token = model.answered[answered]?.firstTokenAt;
      runs["Discord guild (edits)"] = {
        firstVisibleMs: first.at - askedAt,
        addedMs: streaming === "on" && token !== undefined ? first.at - token : undefined,
        completeMs: (edits.at(-1)?.at ?? first.at) - askedAt,
        updates: edits.length,
        rateLimited: discord.editRateLimited.filter((r) => r.channelId === channelId && r.at >= askedAt).length,
        messages: discord.sent.filter((m) => m.channelId === channelId && m.at >= askedAt).length,
        final: String(first.message.content),
      };
    }
  } finally {
    await bot.stop();
    await fakes.stop();
  }
  return runs;
}

/** Press → stream end and press → final edit of one stop, in ms. */
interface StopRun {
  streamEndMs: number;
  finalMs: number;
}

const STOP_PRESSES = Number(process.env.BENCH_STOP_PRESSES ?? 5);

/** Stops `STOP_PRESSES` answers per way (see the module comment); the figures per way. */
async function runStops(): Promise<Record<string, StopRun[]>> {
  const fakes = await startFakes("on");
  const { redis, model, telegram, discord, config } = fakes;
  const common = { config, log: silentLogger, redisUrl: redis.url, toolbox: new ToolBox([]), prefix: "benchstop" };
  const worker: RunningBot = await startBot({
    ...common,
    role: "worker",
    agent: { runAgent, client: createAnthropicClient(config, { maxRetries: 0 }) },
  });
  const adapters: RunningBot = await startBot({ ...common, role: "adapter" });
  const answer = answerText();
  // Held at its 100th character until the stop closes the connection.
  const held = { ...text(answer), stream: { chunkChars: 10, holdAfterChars: 100 } };
  const runs: Record<string, StopRun[]> = {
    "Telegram group, Stop button": [],
    "Telegram group, /stop": [],
    "Discord channel, Stop button": [],
  };
  const measure = async (press: () => void, final: () => number | undefined, what: string): Promise<StopRun> => {
    const cut = model.cutOff.length;
    const pressedAt = Date.now();
    press();
    const end = await eventually(async () => model.cutOff[cut], `${what}: the stream's end`, STEP_TIMEOUT_MS);
    const finalAt = await eventually(async () => final(), `${what}: the stopped answer`, STEP_TIMEOUT_MS);
    return { streamEndMs: end.at - pressedAt, finalMs: finalAt - pressedAt };
  };
  try {
    for (let i = 0; i < STOP_PRESSES; i++) {
      for (const way of ["button", "command"] as const) {
        const user = telegram.user(881000 + i, "Bench");
        const group = telegram.group(-1008810000 - i * 2 - (way === "button" ? 0 : 1), "Bench stop");
        model.enqueue(held);
        telegram.sendUserMessage({ chat: group, from: user, text: `@${telegram.bot.username} 今天天氣如何？` });
        const live = await eventually(
          async () =>
            telegram.sent.find((m) => m.chatId === group.id && m.text.length >= 80 && telegram.buttons(m).length > 0),
          "the Telegram live answer",
          STEP_TIMEOUT_MS,
        );
        const data = telegram.buttons(live)[0]!.callback_data!;
        const finalEdit = () =>
          telegram.edits.find(
            (e) =>
              Number(e.payload.message_id) === live.messageId &&
              e.payload.parse_mode === "HTML" &&
              String(e.payload.text).includes("⏹"),
          )?.at;
        runs[way === "button" ? "Telegram group, Stop button" : "Telegram group, /stop"]!.push(
          await measure(
            () =>
              way === "button"
                ? telegram.pressButton({ from: user, message: live, data })
                : telegram.sendUserMessage({ chat: group, from: user, text: `/stop@${telegram.bot.username}` }),
            finalEdit,
            `Telegram ${way}`,
          ),
        );
      }
      const user = { id: `78100000000000000${i}`, username: "bench", global_name: "Bench" };
      const channelId = discord.channelId;
      const askedAt = Date.now();
      model.enqueue(held);
      discord.sendUserMessage(user, `<@${discord.bot.id}> 今天天氣如何？`, { channelId });
      const live = await eventually(
        async () =>
          discord.sent.find(
            (m) =>
              m.channelId === channelId &&
              m.at >= askedAt &&
              String(m.message.content).length >= 80 &&
              ((m.message.components ?? []) as unknown[]).length > 0,
          ),
        "the Discord live answer",
        STEP_TIMEOUT_MS,
      );
      const rows = live.message.components as { components: { custom_id: string }[] }[];
      runs["Discord channel, Stop button"]!.push(
        await measure(
          () => discord.clickButton(user, live.id, rows[0]!.components[0]!.custom_id),
          () => discord.edits.find((e) => e.messageId === live.id && String(e.payload.content).includes("⏹"))?.at,
          "Discord button",
        ),
      );
    }
  } finally {
    await adapters.stop();
    await worker.stop();
    await fakes.stop();
  }
  return runs;
}

/** `values`' median and largest, in ms. */
function spread(values: number[]): string {
  const sorted = [...values].sort((a, b) => a - b);
  const median = sorted[Math.floor((sorted.length - 1) / 2)] ?? 0;
  return `median ${median} ms, max ${sorted.at(-1) ?? 0} ms`;
}

async function main(): Promise<void> {
  console.log(
    `bench:stream — a ${answerText().length}-character answer streamed over ${TOTAL_MS} ms ` +
      `(first token after ${FIRST_MS} ms), STREAM_EDIT_INTERVAL_MS=${INTERVAL}`,
  );
  const on = await runAll("on");
  const off = await runAll("off");
  for (const platform of Object.keys(on)) {
    const s = on[platform]!;
    const p = off[platform]!;
    const budget = Math.ceil(s.completeMs / 1000) + (s.messages - 1);
    console.log(`\n${platform}`);
    console.log(`  added latency, model's first token → first visible text: ${s.addedMs ?? "n/a"} ms (goal < 300 ms)`);
    console.log(
      `  first visible text after the question: streamed ${s.firstVisibleMs} ms, not streamed ${p.firstVisibleMs} ms`,
    );
    console.log(
      `  complete answer after the question:    streamed ${s.completeMs} ms, not streamed ${p.completeMs} ms`,
    );
    console.log(
      `  live updates (drafts or edits): ${s.updates}, 429s: ${s.rateLimited}, messages: ` +
        `${s.messages} (goal: ≤ ${budget}, one per second plus one per extra message)`,
    );
    console.log(
      `  final text byte-equal to the non-streamed answer: ${s.final === p.final ? "yes" : "NO"} (${Buffer.byteLength(s.final)} bytes compared)`,
    );
  }
  console.log(`\nStop (adapters and worker as two bots on one Redis; ${STOP_PRESSES} presses each)`);
  for (const [way, stops] of Object.entries(await runStops())) {
    console.log(`\n${way}`);
    console.log(`  press → end of the model stream: ${spread(stops.map((s) => s.streamEndMs))} (goal < 1000 ms)`);
    console.log(`  press → stopped answer's final edit (⏹ 已停止): ${spread(stops.map((s) => s.finalMs))}`);
  }
}

await main();
