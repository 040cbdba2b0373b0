/**
 * Shared pieces of the end-to-end scenario files (`scenarios-telegram.test.ts`,
 * `scenarios-discord.test.ts`): expected values computed independently of the bot's code
 * (today's date in Taipei, the recorded CWA forecast), lookups in the model's requests, and the
 * secrets that must never reach a log line.
 */
import { connectRedis, isCluster } from "../../src/redis.js";
import type { FakeRequest } from "../fakes/anthropic.js";
import { readCwaFixture } from "../fakes/cwa.js";
import type { Stack } from "./harness.js";

/** SDK retries per model call in these suites (the harness default). */
export const MODEL_RETRIES = 1;

/** The bounded "nothing happens" window for messages the bot must ignore, in ms (≤ 1.5 s by the team's rule). */
export const QUIET_WINDOW_MS = 1200;

/** Longest wait for one answer, in ms (generous: two suites share 2 cores). */
export const ANSWER_TIMEOUT_MS = 15_000;

/** The calendar date (`yyyy-MM-dd`) at `at` (ms since the Unix epoch) in Asia/Taipei. */
export function taipeiDate(at: number): string {
  return new Intl.DateTimeFormat("en-CA", {
    timeZone: "Asia/Taipei",
    year: "numeric",
    month: "2-digit",
    day: "2-digit",
  }).format(new Date(at));
}

/** One time window of the recorded forecast: weather (Wx), chance of rain (PoP, %), min and max temperature (°C). */
export interface RecordedWindow {
  startTime: string;
  wx: string;
  pop: string;
  minT: string;
  maxT: string;
}

interface RecordedDocument {
  records: {
    location: {
      locationName: string;
      weatherElement: { elementName: string; time: { startTime: string; parameter: { parameterName: string } }[] }[];
    }[];
  };
}

/**
 * The windows of `locationName` in the recording the fake CWA serves by default (2026-03-01),
 * read straight from the JSON (not through the bot's CWA client).
 * @throws {Error} when the recording has no such location.
 */
export function recordedForecast(locationName: string): RecordedWindow[] {
  const doc = readCwaFixture("2026-03-01") as RecordedDocument;
  const location = doc.records.location.find((l) => l.locationName === locationName);
  if (!location) throw new Error(`no ${locationName} in the CWA recording`);
  const element = (name: string) => location.weatherElement.find((e) => e.elementName === name)!.time;
  return element("Wx").map((t, i) => ({
    startTime: t.startTime,
    wx: t.parameter.parameterName,
    pop: element("PoP")[i]!.parameter.parameterName,
    minT: element("MinT")[i]!.parameter.parameterName,
    maxT: element("MaxT")[i]!.parameter.parameterName,
  }));
}

/** The texts of a request message (string content or its text blocks). */
export function textsOf(message: FakeRequest["messages"][number]): string[] {
  if (typeof message.content === "string") return [message.content];
  return message.content.filter((b) => b.type === "text").map((b) => String(b.text));
}

/** The model requests whose last message is a user turn containing `fragment`. */
export function requestsFor(stack: Stack, fragment: string): FakeRequest[] {
  return stack.model.requests.filter((r) => {
    const last = r.messages[r.messages.length - 1]!;
    return last.role === "user" && textsOf(last).some((t) => t.includes(fragment));
  });
}

/** Every distinct `tool_use` block named `name` that the model sent (as echoed back in later requests), by id. */
export function toolUsesOf(stack: Stack, name: string): { id: string; input: unknown }[] {
  const byId = new Map<string, { id: string; input: unknown }>();
  for (const r of stack.model.requests) {
    for (const m of r.messages) {
      if (m.role !== "assistant" || typeof m.content === "string") continue;
      for (const b of m.content)
        if (b.type === "tool_use" && b.name === name) byId.set(String(b.id), { id: String(b.id), input: b.input });
    }
  }
  return [...byId.values()];
}

/** Whether any request to the model carried `fragment` anywhere in its messages. */
export function modelSaw(stack: Stack, fragment: string): boolean {
  return stack.model.requests.some((r) => r.messages.some((m) => JSON.stringify(m.content).includes(fragment)));
}

/**
 * The secrets of the stack that must never appear in a log line: the Telegram bot token (and its
 * secret half after the colon), the Discord token, the Anthropic API key, the CWA key, and the
 * transcription key when the stack runs the fake transcription API.
 */
export function secretsOf(stack: Stack): Record<string, string> {
  return {
    TELEGRAM_BOT_TOKEN: stack.telegram.token,
    "TELEGRAM_BOT_TOKEN secret half": stack.telegram.token.split(":")[1]!,
    DISCORD_TOKEN: stack.discord.token,
    ANTHROPIC_API_KEY: stack.config.ANTHROPIC_API_KEY!,
    CWA_API_KEY: stack.cwa.key,
    ...(stack.stt ? { STT_API_KEY: stack.stt.key } : {}),
  };
}

/** Log lines (as JSON text) that contain a secret, with the secret's name; empty when clean. */
export function leakedSecrets(stack: Stack): { secret: string; line: string }[] {
  const leaks: { secret: string; line: string }[] = [];
  const lines = stack.logs().map((l) => JSON.stringify(l));
  for (const [name, value] of Object.entries(secretsOf(stack))) {
    for (const line of lines) if (line.includes(value)) leaks.push({ secret: name, line: line.slice(0, 300) });
  }
  return leaks;
}

/**
 * Every value stored in the stack's Redis (history, traces, approvals, todos, queue jobs), as
 * text: strings, list items, hash fields and values, set and sorted-set members, stream entries.
 * Keys of other types are listed by name only.
 */
export async function redisDump(stack: Stack): Promise<{ key: string; text: string }[]> {
  const redis = connectRedis(stack.redis.url);
  try {
    const out: { key: string; text: string }[] = [];
    await redis.ping(); // a cluster knows its masters once connected
    // A cluster's keys are spread over its masters: SCAN each of them.
    for (const node of isCluster(redis) ? redis.nodes("master") : [redis]) {
      let cursor = "0";
      do {
        const [next, keys] = await node.scan(cursor, "COUNT", 500);
        cursor = next;
        for (const key of keys) {
          const type = await redis.type(key);
          let value: unknown;
          if (type === "string") value = await redis.get(key);
          else if (type === "list") value = await redis.lrange(key, 0, -1);
          else if (type === "hash") value = await redis.hgetall(key);
          else if (type === "set") value = await redis.smembers(key);
          else if (type === "zset") value = await redis.zrange(key, 0, -1);
          else if (type === "stream") value = await redis.xrange(key, "-", "+");
          out.push({ key, text: `${key} ${JSON.stringify(value ?? null)}` });
        }
      } while (cursor !== "0");
    }
    return out;
  } finally {
    redis.disconnect();
  }
}

/** Redis keys whose stored values contain a secret of the stack, with the secret's name; empty when clean. */
export async function secretsInRedis(stack: Stack): Promise<{ secret: string; key: string }[]> {
  const found: { secret: string; key: string }[] = [];
  const dump = await redisDump(stack);
  for (const [name, value] of Object.entries(secretsOf(stack))) {
    for (const entry of dump) if (entry.text.includes(value)) found.push({ secret: name, key: entry.key });
  }
  return found;
}

/** Messages the bot wrote to users (sent, edited, interaction answers) that contain a secret; empty when clean. */
export function secretsInChats(stack: Stack): { secret: string; text: string }[] {
  const texts = [
    ...stack.telegram.sent.map((m) => m.text),
    ...stack.telegram.callbackAnswers.map((a) => JSON.stringify(a)),
    ...stack.discord.sent.map((m) => JSON.stringify(m.payload)),
    ...stack.discord.edits.map((e) => JSON.stringify(e.payload)),
    ...[...stack.discord.interactions.values()].map((i) => JSON.stringify([i.response ?? null, i.edits])),
  ];
  const found: { secret: string; text: string }[] = [];
  for (const [name, value] of Object.entries(secretsOf(stack))) {
    for (const text of texts) if (text.includes(value)) found.push({ secret: name, text: text.slice(0, 300) });
  }
  return found;
}
