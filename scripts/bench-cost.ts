/**
 * `npm run bench -- --cost`: what a long conversation costs, with and without compaction.
 *
 * A scripted 200-turn conversation (BENCH_TURNS) goes through the real queue, worker, history
 * and agent loop (the shipped tools offered, as in production) against the strict fake Messages
 * API, whose `usage` follows the real API's prompt caching (`PromptCache` of
 * `test/fakes/anthropic.ts`: breakpoints, 1024-token minimum, 5-minute entries, on a simulated
 * clock: one user turn every 30 s, or every BENCH_TURN_GAP_SECONDS). Every fifth turn calls a tool. Run twice: with compaction (the
 * defaults, `COMPACT_AT_TOKENS` 60000, `COMPACT_KEEP_TURNS` 6, and `HISTORY_MAX_MESSAGES` 40) and
 * without it (a worker without the compaction feature: the history is only trimmed).
 *
 * Prints, per 20 turns: input tokens billed at full price, cache writes, cache reads, output, the
 * cache reads' share of all input tokens, and the billed-equivalent input (full price + 1.25 ×
 * writes + 0.1 × reads) per turn, and the budget tokens per turn (what `USER_DAILY_TOKENS` counts:
 * the billed-equivalent input plus output × 5, `budgetTokensOf`); the compactions' own requests are
 * counted in the turn that triggered them, and also shown on their own. A legend under each table
 * says which columns are per 20 turns and which per turn; the last line says how many such turns
 * the default `USER_DAILY_TOKENS` holds a day.
 */
import { runAgent } from "../src/agent/loop.js";
import { createAnthropicClient } from "../src/agent/client.js";
import { historyTtlSeconds, loadConfig, type Config } from "../src/config.js";
import { HistoryStore } from "../src/history/store.js";
import { silentLogger } from "../src/log.js";
import type { IncomingMessage } from "../src/queue/incoming.js";
import { ChatQueue } from "../src/queue/producer.js";
import { connectRedis, WORKER_REDIS_OPTIONS } from "../src/redis.js";
import { loadTools } from "../src/toolbox/registry.js";
import { outputWeightFor } from "../src/usage/budget.js";
import { budgetTokensOf } from "../src/usage/store.js";
import { startWorker } from "../src/worker/worker.js";
import { BenchOutbound } from "./bench-outbound.js";
import { startFakeAnthropic, text, toolUse, type FakeRequest } from "../test/fakes/anthropic.js";
import { startRedis } from "../test/helpers/redis.js";
import { FEATURES } from "../src/features.js";

const TURNS = Number(process.env.BENCH_TURNS ?? 200);
const STEP = 20;
const TURN_GAP_MS = Number(process.env.BENCH_TURN_GAP_SECONDS ?? 30) * 1000;
/** The configuration of the runs (defaults: `USER_DAILY_TOKENS`, no `MODEL_PRICES`), set by {@link run}. */
let benchConfig: Config | undefined;

const isCompaction = (r: FakeRequest) =>
  r.tools === undefined && JSON.stringify(r.system ?? "").includes("You write the summary");

/** The scripted model: a tool call every fifth turn, answers of a few sentences, summaries of about 300 words. */
function model(request: FakeRequest) {
  if (isCompaction(request))
    return text(
      `- 使用者正在規劃一趟台灣環島旅行，已決定的行程與預算如下。\n${"- 第 N 天：住宿、交通與餐廳的決定，以及還沒回答的問題。\n".repeat(25)}`,
    );
  const last = request.messages[request.messages.length - 1]!;
  const blocks = typeof last.content === "string" ? [] : last.content;
  if (blocks.some((b) => b.type === "tool_result"))
    return text("算好了：總共是 12,345 元，平均每人 4,115 元。還需要我把住宿費也加進去嗎？");
  const said = JSON.stringify(last.content);
  if (/#tool/.test(said)) return toolUse("calculate", { expression: "4115 * 3" });
  return text(
    `好的，我記下來了。${"關於這一段行程，我建議先訂好住宿，再安排交通；如果天氣不好，可以改去室內的景點。".repeat(3)}`,
  );
}

/** Input tokens of the chat requests from the third turn on (reads, and all), for the 80 % goal. */
const fromThird = { read: 0, all: 0 };

interface Tally {
  input: number;
  write: number;
  read: number;
  output: number;
  compactions: number;
  compactionBilled: number;
  /** Budget tokens ({@link budgetTokensOf}) of all requests of these turns, compactions included. */
  budget: number;
  /** The same with each answer's output re-counted at one token per CJK character ({@link cjkOutputTokens}). */
  budgetCjk: number;
}

/**
 * The output tokens of an answer's content counted as a real tokenizer counts Chinese text, about
 * one token per CJK character (the fake counts 4 characters of JSON a token, which undercounts
 * Chinese about threefold): CJK characters one each, everything else 4 characters a token.
 */
function cjkOutputTokens(content: Record<string, unknown>[]): number {
  const all = JSON.stringify(content);
  const cjk = (all.match(/[\u3000-\u9fff\uff00-\uffef]/gu) ?? []).length;
  return Math.max(1, cjk + Math.ceil((all.length - cjk) / 4));
}

async function run(compaction: boolean): Promise<Tally[]> {
  fromThird.read = 0;
  fromThird.all = 0;
  const redis = await startRedis();
  let now = Date.parse("2026-12-01T01:00:00Z");
  const fake = await startFakeAnthropic({ fallback: model, promptCache: { now: () => now } });
  const config = loadConfig(
    {
      LOG_LEVEL: "silent",
      ANTHROPIC_API_KEY: "bench-key-000",
      ANTHROPIC_BASE_URL: fake.url,
      WORKER_CONCURRENCY: "4",
      STREAMING: "off",
    },
    { purpose: "inspect" },
  );
  benchConfig = config;
  const weight = outputWeightFor(config, config.ANTHROPIC_MODEL);
  const connection = connectRedis(redis.url, WORKER_REDIS_OPTIONS);
  const { toolbox } = await loadTools({ config, log: silentLogger });
  const outbound = new BenchOutbound(4096);
  const history = new HistoryStore(connection, {
    maxMessages: config.HISTORY_MAX_MESSAGES,
    ttlSeconds: historyTtlSeconds(config),
  });
  const worker = startWorker(
    {
      config,
      log: silentLogger,
      redis: connection,
      history,
      toolbox,
      client: createAnthropicClient(config, { maxRetries: 0, timeoutMs: 10_000 }),
      runAgent,
      outbounds: { telegram: outbound },
      prefix: "cost",
    },
    compaction ? FEATURES : FEATURES.filter((f) => f.name !== "compaction"),
  );
  await worker.waitUntilReady();
  const queue = new ChatQueue({ redis: connection, prefix: "cost" });
  const tallies: Tally[] = [];
  let seen = 0;
  try {
    for (let turn = 0; turn < TURNS; turn += 1) {
      const message: IncomingMessage = {
        platform: "telegram",
        chatId: "cost-chat",
        chatKind: "dm",
        userId: "u1",
        userName: "Traveller",
        text: `第 ${turn + 1} 個問題：${turn % 5 === 4 ? "#tool 幫我算一下三個人的總費用。" : "我們第二天要從花蓮到台東，中午想吃在地小吃，晚上住哪裡比較方便？"}`,
        messageId: String(turn + 1),
        sentAt: now,
        reply: {},
      };
      const before = outbound.done.size;
      await queue.enqueue(message);
      while (outbound.done.size === before) await new Promise((r) => setTimeout(r, 2));
      // A compaction queued by this answer runs before the next user turn (it has time: 30 s pass).
      await new Promise((r) => setTimeout(r, 30));
      for (let i = 0; i < 200 && compaction && (await pendingCompactions(connection)) > 0; i += 1)
        await new Promise((r) => setTimeout(r, 10));
      now += TURN_GAP_MS;
      const bucket = Math.floor(turn / STEP);
      const t = (tallies[bucket] ??= {
        input: 0,
        write: 0,
        read: 0,
        output: 0,
        compactions: 0,
        compactionBilled: 0,
        budget: 0,
        budgetCjk: 0,
      });
      for (const a of fake.answered.slice(seen)) {
        if (turn >= 2 && !isCompaction(a.request)) {
          fromThird.read += a.usage.cache_read_input_tokens;
          fromThird.all += a.usage.input_tokens + a.usage.cache_creation_input_tokens + a.usage.cache_read_input_tokens;
        }
        t.input += a.usage.input_tokens;
        t.write += a.usage.cache_creation_input_tokens;
        t.read += a.usage.cache_read_input_tokens;
        t.output += a.usage.output_tokens;
        t.budget += budgetTokensOf(a.usage, weight);
        t.budgetCjk += budgetTokensOf({ ...a.usage, output_tokens: cjkOutputTokens(a.content) }, weight);
        if (isCompaction(a.request)) {
          t.compactions += 1;
          t.compactionBilled +=
            a.usage.input_tokens + 1.25 * a.usage.cache_creation_input_tokens + 0.1 * a.usage.cache_read_input_tokens;
        }
      }
      seen = fake.answered.length;
    }
    if (fake.rejections.length > 0)
      throw new Error(`the fake refused ${fake.rejections.length} requests: ${fake.rejections[0]!.message}`);
  } finally {
    await queue.close();
    await worker.close();
    connection.disconnect();
    await fake.close();
    await redis.stop();
  }
  return tallies;
}

/** Compaction jobs waiting or running (BullMQ's lists and sets under the benchmark's prefix). */
async function pendingCompactions(redis: ReturnType<typeof connectRedis>): Promise<number> {
  const [wait, active, prioritized] = await Promise.all([
    redis.llen("cost:compactions:wait"),
    redis.llen("cost:compactions:active"),
    redis.zcard("cost:compactions:prioritized"),
  ]);
  return wait + active + prioritized;
}

function print(title: string, tallies: Tally[]): void {
  console.log(`\n${title}`);
  console.log(
    "turns      input  cache write  cache read   output  reads/input  billed-eq/turn  budget/turn  compactions (billed-eq)",
  );
  tallies.forEach((t, i) => {
    const all = t.input + t.write + t.read;
    const billed = t.input + 1.25 * t.write + 0.1 * t.read;
    const last = Math.min((i + 1) * STEP, TURNS); // a shorter run (BENCH_TURNS) ends in a part of a step
    const range = `${i * STEP + 1}-${last}`.padEnd(8);
    console.log(
      `${range} ${String(t.input).padStart(8)} ${String(t.write).padStart(12)} ` +
        `${String(t.read).padStart(11)} ${String(t.output).padStart(8)} ` +
        `${`${((100 * t.read) / Math.max(1, all)).toFixed(1)} %`.padStart(12)} ` +
        `${(billed / (last - i * STEP)).toFixed(0).padStart(15)} ` +
        `${(t.budget / (last - i * STEP)).toFixed(0).padStart(12)} ` +
        `${`${t.compactions} (${t.compactionBilled.toFixed(0)})`.padStart(24)}`,
    );
  });
  console.log(
    "legend: input, cache write, cache read, output and compactions are sums over the row's turns (20 turns a row);\n" +
      "        reads/input is the row's cache reads over all its input tokens; billed-eq/turn (input + 1.25 × cache\n" +
      "        write + 0.1 × cache read) and budget/turn (billed-eq + output × 5: what USER_DAILY_TOKENS counts) are per turn,\n" +
      "        averaged over the row; compactions (billed-eq) counts the compactions and their billed-eq input, per row.",
  );
  const sum = tallies.reduce(
    (a, t) => ({
      input: a.input + t.input,
      write: a.write + t.write,
      read: a.read + t.read,
      budget: a.budget + t.budget,
      budgetCjk: a.budgetCjk + t.budgetCjk,
    }),
    { input: 0, write: 0, read: 0, budget: 0, budgetCjk: 0 },
  );
  const billed = sum.input + 1.25 * sum.write + 0.1 * sum.read;
  console.log(
    `chat requests from the third turn on: cache reads ${((100 * fromThird.read) / Math.max(1, fromThird.all)).toFixed(1)} % of their input tokens`,
  );
  console.log(
    `all ${TURNS} turns: billed-equivalent input ${billed.toFixed(0)} tokens (` +
      `${(billed / TURNS).toFixed(0)} per turn), cache reads ` +
      `${((100 * sum.read) / Math.max(1, sum.input + sum.write + sum.read)).toFixed(1)} % of ` +
      `input tokens`,
  );
  const daily = benchConfig?.USER_DAILY_TOKENS ?? 0;
  const perTurn = sum.budget / TURNS;
  console.log(
    `budget tokens: ${sum.budget} in ${TURNS} turns (${perTurn.toFixed(0)} per turn); the default ` +
      `USER_DAILY_TOKENS=${daily} holds ${daily > 0 ? Math.floor(daily / perTurn) : "unlimited"} such turns a day`,
  );
  const perTurnCjk = sum.budgetCjk / TURNS;
  console.log(
    `with the answers' output at one token per CJK character (as a real tokenizer counts Chinese): ` +
      `${sum.budgetCjk} (${perTurnCjk.toFixed(0)} per turn); USER_DAILY_TOKENS=${daily} holds ` +
      `${daily > 0 ? Math.floor(daily / perTurnCjk) : "unlimited"} such turns a day`,
  );
}

/** Runs both passes and prints their tables. */
export async function costBench(): Promise<void> {
  console.log(
    `cost of a ${TURNS}-turn conversation (one turn every ${TURN_GAP_MS / 1000} s, a tool call ` +
      `every 5th turn), tokens as the fake Messages API bills them (prompt caching as the API's)`,
  );
  print("with compaction (COMPACT_AT_TOKENS=60000, COMPACT_KEEP_TURNS=6, HISTORY_MAX_MESSAGES=40)", await run(true));
  print("without compaction (history trimmed at HISTORY_MAX_MESSAGES=40)", await run(false));
}
