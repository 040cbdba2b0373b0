/**
 * What the queue pages (Bull Board, `/admin/queues`) show of a job: enough to debug it — platform,
 * chat, user and message ids, kinds, sizes, times, attempts — and never its content or a credential.
 *
 * Bull Board shows a job's whole `data`, return value and progress; its queue adapters take a
 * formatter for each (`BaseAdapter.setFormatter`, `@bull-board/api` 9), applied by its API before
 * anything leaves the server (the job list, one job, a scheduler's template through
 * {@link ConsoleQueueAdapter}). {@link jobView} is that formatter: a deep walk over the value that
 *
 * - hides every {@link CONTENT_KEYS} value (message text, an instruction, a reminder's text, an
 *   answer…) behind `[hidden: 42 characters]` (or `[hidden: 3 items]`, `[hidden: 5 fields]`);
 * - hides every {@link SECRET_KEYS} value (a LINE reply token, a file id or URL that fetches the
 *   file, any token or password) behind `[hidden: credential]`;
 * - shows numbers, booleans and short strings under other keys, each string through {@link redact}
 *   (the secret shapes of `src/log.ts`) as a second net — but a string longer than
 *   {@link MAX_SHOWN} characters under a key it does not know is hidden like content, so a new
 *   feature's queue is covered without editing the console.
 *
 * A job's `failedReason` and stack trace are not among Bull Board's formatter fields; the adapter
 * runs them through {@link redact} (they are error messages, which the bot already redacts).
 */
import { BullMQAdapter } from "@bull-board/api/bullMQAdapter";
import type { Job, Queue } from "bullmq";
import { redact } from "../log.js";
import { englishCount } from "../i18n.js";

/**
 * Keys whose values are content — what a person wrote or will read — hidden with their size
 * whatever their type. Compared lower-cased.
 */
export const CONTENT_KEYS: ReadonlySet<string> = new Set([
  "text",
  "caption",
  "instruction",
  "prompt",
  "content",
  "message",
  "messages",
  "body",
  "answer",
  "reply_text",
  "replytext",
  "summary",
  "history",
  "input",
  "output",
  "result",
  "note",
  "notes",
  "title",
  "description",
  "question",
  "options",
  "username",
  "name",
  "filename",
  "preview",
  "transcript",
]);

/** Keys whose values are credentials (or fetch a file on the bot's behalf): hidden without their size. Compared lower-cased. */
export const SECRET_KEYS: ReadonlySet<string> = new Set([
  "replytoken",
  "token",
  "accesstoken",
  "refreshtoken",
  "secret",
  "password",
  "apikey",
  "api_key",
  "authorization",
  "cookie",
  "fileid",
  "url",
]);

/** Longest string shown under a key that is neither content nor a credential (chat ids go up to 128). */
export const MAX_SHOWN = 128;

/** Deepest level walked; anything deeper is hidden with its size. */
const MAX_DEPTH = 8;
/** Most items of an array or fields of an object shown; the rest are counted. */
const MAX_ITEMS = 50;

/** The placeholder of a hidden value: what it was and its size, never a part of it. */
function hidden(value: unknown): string {
  if (typeof value === "string") return `[hidden: ${englishCount(value.length, "character")}]`;
  if (Array.isArray(value)) return `[hidden: ${englishCount(value.length, "item")}]`;
  if (value !== null && typeof value === "object")
    return `[hidden: ${englishCount(Object.keys(value).length, "field")}]`;
  return "[hidden]";
}

function walk(value: unknown, depth: number): unknown {
  if (value === null || value === undefined || typeof value === "number" || typeof value === "boolean") return value;
  if (typeof value === "string") return value.length > MAX_SHOWN ? hidden(value) : redact(value);
  if (depth >= MAX_DEPTH) return hidden(value);
  if (Array.isArray(value)) {
    const shown = value.slice(0, MAX_ITEMS).map((item) => walk(item, depth + 1));
    return value.length > MAX_ITEMS ? [...shown, `[${value.length - MAX_ITEMS} more]`] : shown;
  }
  if (typeof value === "object") {
    const out: Record<string, unknown> = {};
    const entries = Object.entries(value as Record<string, unknown>);
    for (const [key, item] of entries.slice(0, MAX_ITEMS)) {
      const k = key.toLowerCase();
      // The key itself is shown: a redacted key (an odd object keyed by content) is still debuggable.
      const shownKey = key.length > MAX_SHOWN ? hidden(key) : redact(key);
      if (SECRET_KEYS.has(k)) out[shownKey] = item === undefined || item === null ? item : "[hidden: credential]";
      else if (CONTENT_KEYS.has(k)) out[shownKey] = item === undefined || item === null ? item : hidden(item);
      else out[shownKey] = walk(item, depth + 1);
    }
    if (entries.length > MAX_ITEMS) out["…"] = `[${entries.length - MAX_ITEMS} more fields]`;
    return out;
  }
  // A bigint, a symbol, a function: not JSON Bull Board would send anyway.
  return hidden(value);
}

/**
 * A job's data, return value or progress as the queue pages show it (see the module comment): a
 * copy with content and credentials replaced by placeholders and every other string redacted.
 * The value given is not changed.
 */
export function jobView(value: unknown): unknown {
  // A bare string at the top (a return value that is the answer itself) is content.
  if (typeof value === "string") return value.length > 0 ? hidden(value) : value;
  return walk(value, 0);
}

/** A job's name as the queue pages show it: redacted, and hidden like content past {@link MAX_SHOWN} characters. */
export function jobNameView(name: string): string {
  return name.length > MAX_SHOWN ? hidden(name) : redact(name);
}

/**
 * Bull Board's BullMQ adapter, read-only, with {@link jobView} as the formatter of every job's data,
 * return value and progress, and {@link jobNameView} of its name. Besides Bull Board's formatters
 * it covers what they do not reach: a job scheduler's template data (the data of the jobs it will
 * add, shown on the schedulers page), a failed job's reason and stack trace (through
 * {@link redact}), and a job's log lines.
 */
export class ConsoleQueueAdapter extends BullMQAdapter {
  /** Adapts `queue` read-only, with the formatters above. */
  constructor(queue: Queue) {
    super(queue, { readOnlyMode: true });
    this.setFormatter("data", jobView);
    this.setFormatter("returnValue", jobView);
    this.setFormatter("progress", jobView);
    this.setFormatter("name", (job: { name?: string }) => jobNameView(job.name ?? ""));
  }

  /** The schedulers, with each template's data formatted like a job's. */
  override async getJobSchedulers(): ReturnType<BullMQAdapter["getJobSchedulers"]> {
    const schedulers = await super.getJobSchedulers();
    return schedulers.map((s) =>
      s.template ? { ...s, name: jobNameView(s.name), template: { ...s.template, data: jobView(s.template.data) } } : s,
    );
  }

  /** One job, its failure redacted (see {@link redactFailure}). */
  override async getJob(id: string): ReturnType<BullMQAdapter["getJob"]> {
    const job = await super.getJob(id);
    return job ? redactFailure(job as Job) : job;
  }

  /** Jobs of the given states, their failures redacted (see {@link redactFailure}). */
  override async getJobs(...args: Parameters<BullMQAdapter["getJobs"]>): ReturnType<BullMQAdapter["getJobs"]> {
    return (await super.getJobs(...args)).map((job) => redactFailure(job as Job));
  }

  /** A job's log lines, each as {@link jobNameView} shows a name: redacted, hidden past {@link MAX_SHOWN} characters (the bot writes none; a feature might). */
  override async getJobLogs(id: string): Promise<string[]> {
    return (await super.getJobLogs(id)).map((line) => jobNameView(line));
  }
}

/**
 * Makes Bull Board's view of `job` (it reads `job.toJSON()`) carry a redacted `failedReason` and
 * stack trace. The job object is the one fetched for this request; nothing is written back.
 */
export function redactFailure<J extends Job>(job: J): J {
  const toJSON = job.toJSON.bind(job);
  job.toJSON = () => {
    const json = toJSON();
    return {
      ...json,
      failedReason: typeof json.failedReason === "string" ? redact(json.failedReason) : json.failedReason,
      stacktrace: Array.isArray(json.stacktrace)
        ? json.stacktrace.map((line) => redact(String(line)))
        : json.stacktrace,
    };
  };
  return job;
}
