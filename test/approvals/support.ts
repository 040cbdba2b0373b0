/**
 * Shared parts of the approval-flow tests: tools over Redis, a model-free stand-in for the agent
 * loop's `resumeAgent` (following `src/agent/contract.ts`; `loop.test.ts` uses the real one),
 * and a flow wired the way the worker wires it, its decision jobs going through the worker's
 * answer pipeline (`answerDecision`), the production path.
 */
import Anthropic from "@anthropic-ai/sdk";
import type { Job } from "bullmq";
import type { RedisClient } from "../../src/redis.js";
import { z } from "zod";
import type { AgentOutcome, MessageParam, PendingCall, PausedRun } from "../../src/agent/contract.js";
import { runAgent } from "../../src/agent/loop.js";
import { ApprovalFlow, type DecisionJob, type HandledDecision, type ResumeAgent } from "../../src/approvals/flow.js";
import { ApprovalStore, type DecisionCallback } from "../../src/approvals/store.js";
import type { GrantStore } from "../../src/approvals/grants.js";
import { HistoryStore } from "../../src/history/store.js";
import { silentLogger } from "../../src/log.js";
import type { ConversationRef, IncomingMessage } from "../../src/queue/incoming.js";
import { TOOL_CALL_PREFIX } from "../../src/queue/keys.js";
import { ExecutionLedger } from "../../src/toolbox/once.js";
import { defineTool, ToolError } from "../../src/toolbox/tool.js";
import { ToolBox } from "../../src/toolbox/toolbox.js";
import { nullRunTracer } from "../../src/trace/tracer.js";
import { testConfig } from "../helpers/config.js";
import { testContext } from "../helpers/context.js";
import { answerDecision } from "../../src/worker/decision.js";
import type { AnswerParts } from "../../src/worker/pipeline.js";
import { RecordingOutbound } from "./recording-outbound.js";
import { FEATURES } from "../../src/features.js";
import { conversationStores } from "../../src/conversations/migrate.js";

/** Runs of the dangerous test tools. */
export const toolRuns = { count: 0 };

/** A dangerous tool over Redis: deletes one of the user's notes (`notes:{platform}:{userId}`). */
export const deleteNote = defineTool({
  name: "approvals_test_delete_note",
  description: "Delete one of the user's notes by number.",
  tags: ["test", "util"],
  dangerous: true,
  input: z.object({ note_id: z.number().int().positive() }),
  async run({ note_id }, context) {
    toolRuns.count++;
    const removed = await context.redis.hdel(`notes:${context.platform}:${context.userId}`, String(note_id));
    if (!removed) throw new ToolError(`No note #${note_id}.`);
    return `Deleted note #${note_id}.`;
  },
  async describe({ note_id }, context) {
    const title = await context.redis.hget(`notes:${context.platform}:${context.userId}`, String(note_id));
    return context.locale === "en" ? `delete note #${note_id} "${title}"` : `刪除筆記 #${note_id}「${title}」`;
  },
});
/** A dangerous tool without `describe`. */
export const plainTool = defineTool({
  name: "approvals_test_wipe",
  description: "Wipe everything.",
  tags: ["test", "util"],
  dangerous: true,
  input: z.object({ really: z.boolean() }),
  run: () => "wiped",
});
/** A safe tool: lists the user's notes. */
export const listNotes = defineTool({
  name: "approvals_test_list_notes",
  description: "List the user's notes with their numbers.",
  tags: ["test", "util"],
  input: z.object({}),
  async run(_input, context) {
    const notes = await context.redis.hgetall(`notes:${context.platform}:${context.userId}`);
    const lines = Object.entries(notes).map(([id, title]) => `#${id} ${title}`);
    return lines.length ? lines.join("\n") : "No notes.";
  },
});
/** The toolbox offered in the tests. */
export const toolbox = new ToolBox([deleteNote, plainTool, listNotes]);
/** Configuration with the default 300 s approval timeout. */
export const config = testConfig({ CONFIRM_TIMEOUT_SECONDS: "300" });
/** A real SDK client; the stand-in loop never calls it. */
export const client = new Anthropic({ apiKey: "sk-test-unused", baseURL: "http://127.0.0.1:9" });

/** Alice's message in a Telegram group asking to delete note 2. */
export const message: IncomingMessage = {
  platform: "telegram",
  chatId: "-100200",
  chatKind: "group",
  userId: "u1",
  userName: "Alice",
  text: "刪掉筆記 2",
  messageId: "m1",
  sentAt: 1_800_000_000_000,
  reply: {},
};
/** The chat of {@link message}. */
export const chat: ConversationRef = { platform: "telegram", chatId: "-100200" };
/** Alice (the requester of {@link message}) in {@link chat}: the key of her pending approval there. */
export const requester = { ...chat, userId: "u1" };
/** Alice's next message in the same conversation (it supersedes her pending approval). */
export const nextMessage: IncomingMessage = { ...message, messageId: "m2", text: "算了" };

/** A run paused at `calls` (all dangerous), as runAgent would return it. */
export function paused(calls: PendingCall[]): Extract<AgentOutcome, { kind: "approval" }> {
  const run: PausedRun = {
    messages: [
      { role: "user", content: message.text },
      {
        role: "assistant",
        content: calls.map((c) => ({ type: "tool_use" as const, id: c.toolUseId, name: c.name, input: c.input })),
      },
    ],
    history: [],
    results: [],
    pending: calls,
    turns: 1,
    callCounts: {},
  };
  return { kind: "approval", run, call: calls[0]! };
}

/** Calls of {@link resumeAgent}. */
export const resumes: { verdict: string; callModel?: boolean; toolUseId: string }[] = [];
/** Stand-in for the loop's resumeAgent, following the contract. */
export const resumeAgent: ResumeAgent = async (run, verdict, deps) => {
  const [call, ...rest] = run.pending;
  if (!call) throw new Error("nothing pending");
  resumes.push({ verdict, callModel: deps.callModel, toolUseId: call.toolUseId });
  let result: Anthropic.Messages.ToolResultBlockParam;
  if (verdict === "approved") {
    const execute = () => deps.toolbox.execute(call.name, call.input, deps.context, { toolUseId: call.toolUseId });
    const r = deps.executeOnce ? await deps.executeOnce(call.toolUseId, execute) : await execute();
    result = { type: "tool_result", tool_use_id: call.toolUseId, content: r.content, is_error: !r.ok };
  } else {
    result = {
      type: "tool_result",
      tool_use_id: call.toolUseId,
      content: `Not run: the user ${verdict} it.`,
      is_error: true,
    };
  }
  const results = [...run.results, result];
  if (rest.length > 0) return { kind: "approval", run: { ...run, results, pending: rest }, call: rest[0]! };
  const text = results.map((r) => r.content).join(" ");
  const messages: MessageParam[] = [
    ...run.messages,
    { role: "user", content: results },
    { role: "assistant", content: [{ type: "text", text }] },
  ];
  return { kind: "answer", text, messages };
};

/** A wired flow, the worker's decision path over it, and what it recorded. */
export interface Harness {
  flow: ApprovalFlow;
  store: ApprovalStore;
  outbound: RecordingOutbound;
  jobs: DecisionJob[];
  expiries: { approvalId: string; delayMs: number }[];
  /**
   * Processes a decision job as the worker's `decisions` Worker does (`answerDecision`, the answer
   * pipeline). `attempt` counts from 1 (a later one may find what an earlier attempt left); `attempts` defaults to 5.
   */
  decide(data: unknown, attempt?: { attempt?: number; attempts?: number }): Promise<HandledDecision>;
  /** The processor of the worker's `decisions` Worker over this flow (`answerDecision` with the job). */
  process(job: Job): Promise<HandledDecision>;
  /** The history of a conversation (`conversationKey`), as the next model request would get it. */
  saved(conversation: string): Promise<MessageParam[]>;
  /** The conversations that have a history (their `conversationKey`s). */
  conversations(): Promise<string[]>;
}

/**
 * A flow as the worker wires it, over the real store and history in Redis and the answer pipeline
 * of the worker; `onDecision` and `scheduleExpiry` are recorded and then passed to `hooks` (e.g. a
 * real BullMQ queue).
 */
export function harness(
  connection: RedisClient,
  outbound = new RecordingOutbound(),
  hooks: {
    onDecision?: DecisionCallback;
    scheduleExpiry?: (approvalId: string, delayMs: number) => Promise<void>;
    timeoutMs?: number;
    resumeAgent?: ResumeAgent;
    /** SDK client for the real loop (pointed at the fake Messages API). */
    client?: Anthropic;
    /** The store's clock, ms since the Unix epoch; default `Date.now`. */
    now?: () => number;
    /** "Always allow" grants (prompts then offer it); default none. */
    grants?: GrantStore;
  } = {},
): Harness {
  const jobs: DecisionJob[] = [];
  const expiries: { approvalId: string; delayMs: number }[] = [];
  const history = new HistoryStore(connection, { maxMessages: 100, ttlSeconds: 3600 });
  const store = new ApprovalStore(connection, {
    timeoutMs: hooks.timeoutMs ?? config.CONFIRM_TIMEOUT_SECONDS * 1000,
    ...(hooks.now ? { now: hooks.now } : {}),
    onDecision: async (d) => {
      jobs.push(d);
      await hooks.onDecision?.(d);
    },
  });
  const flow = new ApprovalFlow({
    store,
    agent: { resumeAgent: hooks.resumeAgent ?? resumeAgent },
    ...(hooks.grants ? { grants: hooks.grants } : {}),
    agentDeps: (m) => ({
      client: hooks.client ?? client,
      config,
      toolbox,
      tracer: nullRunTracer,
      context: testContext({
        platform: m.platform,
        chatId: m.chatId,
        chatKind: m.chatKind,
        userId: m.userId,
        userName: m.userName,
        redis: connection,
        config,
      }),
    }),
    appendHistory: (c, messages, tag) => history.append(c, messages, tag),
    scheduleExpiry: async (approvalId, delayMs) => {
      expiries.push({ approvalId, delayMs });
      await hooks.scheduleExpiry?.(approvalId, delayMs);
    },
  });
  const parts: AnswerParts = {
    conversationStores: conversationStores(FEATURES),
    config,
    log: silentLogger,
    redis: connection,
    history,
    toolbox,
    client: hooks.client ?? client,
    runAgent,
    outbounds: { [outbound.platform]: outbound },
    approvals: flow,
    typingIntervalMs: 4000,
    ledger: new ExecutionLedger(connection, { prefix: TOOL_CALL_PREFIX }),
  };
  return {
    flow,
    store,
    outbound,
    jobs,
    expiries,
    decide: (data, { attempt = 1, attempts = 5 } = {}) =>
      answerDecision(parts, { data, attemptsMade: attempt - 1, attemptsStarted: attempt, opts: { attempts } }),
    process: (job) => answerDecision(parts, job),
    saved: async (key) => {
      const [platform, rest] = key.split(/:(.*)/s) as [ConversationRef["platform"], string];
      const [chatId, topicId] = rest.split("/");
      return history.load({ platform, chatId: chatId!, ...(topicId ? { topicId } : {}) });
    },
    conversations: async () =>
      (await connection.keys("history:*")).map((k) => k.replace(/^history:\{(.*)\}$/, "$1")).sort(),
  };
}
