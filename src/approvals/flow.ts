/**
 * The approval flow: what the worker calls when a run pauses at a dangerous tool, when the
 * requester's decision (or the expiry) arrives as a job, and when a new message makes a pending
 * approval moot. Written against the contracts only; everything it talks to is injected.
 *
 * Main path:
 * 1. {@link ApprovalFlow.begin}: save the paused run, post the prompt, schedule the expiry job.
 * 2. A button/reaction → `ApprovalStore.decide` → `onDecision` → a `decisions` job → the worker's
 *    answer pipeline (`src/worker/decision.ts`): {@link ApprovalFlow.takeDecision} (is this
 *    decision current?), {@link ApprovalFlow.closePrompt} (the outcome on the prompt),
 *    {@link ApprovalFlow.resume} (the grant, then the run: the approved tool runs through
 *    `store.executeOnce`), and the pipeline's own history append, delivery and retries; at the end
 *    {@link ApprovalFlow.finish} deletes the record (after {@link ApprovalFlow.failureText} told the
 *    requester, when it failed). The deletion leaves a small marker of how it was decided until
 *    the prompt's own expiry, so a later press on a prompt that was not closed (LINE cannot edit
 *    it; a Discord edit may fail) is told "already confirmed" / "already cancelled", not "expired".
 * 3. No decision in time → the expiry job → the same path with `verdict: "expired"`.
 * 4. A new message of the requester in the same conversation → {@link ApprovalFlow.supersedePending}
 *    before it is handled. Other people's messages leave the prompt open.
 */
import { cutUnits } from "../cut.js";
import { z } from "zod";
import type {
  AgentDeps,
  AgentOutcome,
  ApprovalVerdict,
  MessageParam,
  PausedOutcome,
  PendingCall,
  PausedRun,
} from "../agent/contract.js";
import type { ResumeDeps } from "../agent/loop.js";
import type { RunTag } from "../history/store.js";
import { localize, type Locale } from "../i18n.js";
import { silentLogger, type Logger } from "../log.js";
import { metrics } from "../metrics.js";
import { markdownLiteral } from "../plain-text.js";
import { destinationOf, type Outbound } from "../outbound.js";
import { conversationOf, type ConversationRef, type IncomingMessage } from "../queue/incoming.js";
import type { ExecuteOnce } from "../toolbox/once.js";
import type { ToolContext } from "../toolbox/tool.js";
import type { ToolBox } from "../toolbox/toolbox.js";
import { durationInWords } from "../reminders/time.js";
import type { RunTracer } from "../trace/tracer.js";
import type { GrantStore } from "./grants.js";
import { APPROVAL_ID_PATTERN, type ApprovalRecord, type ApprovalStore, type RequesterRef } from "./store.js";

/** The agent loop's resume function (`resumeAgent` of `src/agent/loop.ts`), injected. */
export type ResumeAgent = (run: PausedRun, verdict: ApprovalVerdict, deps: ResumeDeps) => Promise<AgentOutcome>;

/**
 * The job data of a decision (from `onDecision`) or of the delayed expiry job. Job data comes
 * back from Redis, so {@link ApprovalFlow.takeDecision} checks it with this schema.
 */
export const DecisionJobSchema = z.object({
  approvalId: z.string().regex(APPROVAL_ID_PATTERN),
  verdict: z.enum(["approved", "declined", "expired"]) satisfies z.ZodType<ApprovalVerdict>,
  /** The press's reply token (LINE), for the answer (`DecisionRequest.reply`); absent for an expiry. */
  reply: z.object({ replyToken: z.string().min(1).max(256), replyTokenAt: z.number().int().nonnegative() }).optional(),
});

/** See {@link DecisionJobSchema}. */
export type DecisionJob = z.output<typeof DecisionJobSchema>;

/** What the flow needs; the worker builds it once. */
export interface ApprovalFlowDeps {
  store: ApprovalStore;
  agent: { resumeAgent: ResumeAgent };
  /**
   * The agent's dependencies and a tool context for a run of `message` without a model call (the
   * prompt's description, closing a superseded run): the toolbox of its context, its tracer.
   */
  agentDeps(
    message: IncomingMessage,
  ):
    | Promise<AgentDeps & { context: ToolContext; tracer: RunTracer }>
    | (AgentDeps & { context: ToolContext; tracer: RunTracer });
  /**
   * Appends a finished run's messages (starting with the user turn) to the conversation's history,
   * tagged with the message it answered; with `resets`, only while the conversation's reset
   * generation is still that (`HistoryStore.append`).
   */
  appendHistory(
    conversation: ConversationRef,
    messages: MessageParam[],
    tag: RunTag,
    resets?: number,
  ): Promise<unknown>;
  /** Adds the delayed expiry job: after `delayMs` ms, a decision job with `verdict: "expired"`. */
  scheduleExpiry(approvalId: string, delayMs: number): Promise<void>;
  /**
   * The "always allow" grants. When given, prompts of tools that accept grants offer "always
   * allow", and such a decision records a grant before the run resumes. Default none (no such button).
   */
  grants?: GrantStore;
  log?: Logger;
}

/** What became of a decision job (the answer pipeline's result for it). */
export type HandledDecision =
  | { status: "answered"; text: string }
  | { status: "asked_again"; approvalId: string }
  | { status: "skipped"; reason: "unknown" | "not_current" | "invalid_job" | "reset" };

/** A decision that is current: the record to resume and the verdict it was decided with. */
export interface TakenDecision {
  record: ApprovalRecord;
  verdict: Extract<ApprovalVerdict, "approved" | "declined" | "expired">;
  /** The press's reply token (LINE) from the decision job: the answer may go out with it while it is valid. */
  reply?: { replyToken: string; replyTokenAt: number };
}

/**
 * The action in plain words for the prompt: what `ToolBox.prepare` says (the tool's
 * `describe(input, context)`; a tool without one: `tool_name {"input":…}`). When the call no longer
 * passes that check (the agent loop checks each call again just before it is asked, so only a
 * change in between gets here), `ToolBox.plainAction`: the tool's activity or title, never the raw
 * input. Never throws.
 */
export async function describeCall(toolbox: ToolBox, call: PendingCall, context: ToolContext): Promise<string> {
  const check = await toolbox.prepare(call.name, call.input, context);
  return check.ok ? check.action : toolbox.plainAction(call.name, call.input, context.locale);
}

/**
 * The text of a closed prompt: the outcome and the action, in `locale`.
 * @param grantMs - for an "always allow" approval: the grant's length in ms, said on the prompt.
 */
export function outcomeText(
  outcome: ApprovalVerdict | "reset",
  action: string,
  locale: Locale,
  grantMs?: number,
): string {
  if (outcome === "approved" && grantMs !== undefined) {
    return localize(
      locale,
      {
        "zh-TW": "✅ 已確認，{duration}內一律允許：{action}",
        en: "✅ Confirmed, always allowed for {duration}: {action}",
      },
      { action, duration: durationInWords(grantMs, locale) },
    );
  }
  const texts = {
    approved: { "zh-TW": "✅ 已確認：{action}", en: "✅ Confirmed: {action}" },
    declined: { "zh-TW": "❌ 已取消，未執行：{action}", en: "❌ Declined, not done: {action}" },
    expired: { "zh-TW": "⌛ 逾時未確認，未執行：{action}", en: "⌛ Timed out, not done: {action}" },
    superseded: {
      "zh-TW": "↩️ 收到新訊息，未確認，未執行：{action}",
      en: "↩️ Not confirmed (a new message came), not done: {action}",
    },
    // Closed like an expired prompt (its ⌛ mark on every platform), saying why.
    reset: { "zh-TW": "⌛ 對話已重設，未執行：{action}", en: "⌛ The conversation was reset, not done: {action}" },
  } as const;
  return localize(locale, texts[outcome], { action });
}

/** How to take back a grant, said after it where the prompt cannot show it ({@link grantLeadText}). */
const REVOKE_HINT = { "zh-TW": "（/permissions 可撤銷）", en: " (/permissions to revoke)" } as const;

/** Longest action in {@link supersededLeadText}, in UTF-16 code units: the line stays short (the prompt above it shows the action whole). */
export const LEAD_ACTION_UNITS = 120;

/**
 * The line the answer after an "always allow" press starts with where the prompt stays as it was
 * sent (`Outbound.promptsStayAsSent`: LINE): what the closed prompt says on the other platforms
 * ({@link outcomeText}, confirmed and always allowed for how long), then how to revoke it. The line
 * is Markdown, as the answer it leads: the action (plain, with values people chose) is written as a
 * literal ({@link markdownLiteral}), so it shows as it is (`rm *_old_*.log` keeps its `*` and `_`).
 * @param grantMs - the grant's length in ms (`ALWAYS_ALLOW_DAYS`).
 */
export function grantLeadText(action: string, grantMs: number, locale: Locale): string {
  return `${outcomeText("approved", markdownLiteral(action), locale, grantMs)}${localize(locale, REVOKE_HINT)}`;
}

/**
 * The line the answer to the requester's new message starts with when that message closed their
 * pending approval and its prompt stays as it was sent (`Outbound.promptsStayAsSent`: LINE): the
 * earlier request was closed without being done. The action is cut to {@link LEAD_ACTION_UNITS}
 * and, as in {@link grantLeadText}, written as a Markdown literal.
 */
export function supersededLeadText(action: string, locale: Locale): string {
  return localize(
    locale,
    {
      "zh-TW": "↩️ 先前等你確認的請求已關閉，未執行：{action}",
      en: "↩️ Your earlier request that was waiting for confirmation was closed, not done: {action}",
    },
    { action: markdownLiteral(cutUnits(action, LEAD_ACTION_UNITS)) },
  );
}

/** What {@link ApprovalFlow.supersedePending} closed. */
export interface SupersededApproval {
  /** The closed approval's id. */
  approvalId: string;
  /**
   * Where its prompt stays as it was sent (`Outbound.promptsStayAsSent`: LINE), the line the answer
   * to the new message starts with ({@link supersededLeadText}, in the approval's language); absent
   * where the prompt was edited to say it, and when the new message is the approval's own (a retried job).
   */
  lead?: string;
}

/** The flow's entry points for the worker. */
export class ApprovalFlow {
  readonly #deps: ApprovalFlowDeps;
  readonly #log: Logger;

  /** @param deps - the store, the loop's `resumeAgent` and the worker's helpers; see {@link ApprovalFlowDeps}. */
  constructor(deps: ApprovalFlowDeps) {
    this.#deps = deps;
    this.#log = deps.log ?? silentLogger;
  }

  /**
   * Saves a paused run and asks its requester. The expiry job is scheduled before the prompt is
   * posted, so even when posting fails (the error is rethrown) the run is closed in time and
   * the history stays valid. Idempotent per message and `tool_use` id: when the requester's pending
   * approval in the conversation is already this call of this message (a retried job), its prompt is posted if it
   * was not yet, and its id returned; no second approval is made. When a decision arrived while
   * the prompt was being posted (its job found no prompt to edit), the prompt is closed here.
   *
   * @param message - the message that started the run (its sender is the only one who may decide).
   * @param outcome - `runAgent`'s / `resumeAgent`'s `{ kind: "approval" }` result.
   * @param outbound - where to post the prompt.
   * @param locale - the conversation's language (its `language` setting); default the run context's.
   * @param resets - the conversation's reset generation when the run began (`HistoryStore.generation`):
   *   once a `/reset` changes it, the approval is closed and its run never resumed.
   * @param lead - the paused answer's lead line (Markdown), for an outbound whose prompts stay as
   *   sent (`ApprovalPrompt.lead`); not kept: a retried job that finds the prompt posted does not repeat it.
   * @returns the approval id.
   * @throws when Redis is unreachable or the prompt could not be posted.
   */
  async begin(
    message: IncomingMessage,
    outcome: PausedOutcome,
    outbound: Outbound,
    locale?: Locale,
    resets?: number,
    lead?: string,
  ): Promise<string> {
    const { store } = this.#deps;
    const existing = await this.#pendingFor(message, outcome.call.toolUseId);
    if (existing?.prompt) return existing.id;
    const deps = await this.#deps.agentDeps(message);
    const { toolbox } = deps;
    const context = locale ? { ...deps.context, locale } : deps.context;
    const action = existing?.action ?? (await describeCall(toolbox, outcome.call, context));
    const alwaysAllow =
      existing?.alwaysAllow ??
      (this.#deps.grants !== undefined && toolbox.get(outcome.call.name)?.alwaysAllow !== false);
    const id =
      existing?.id ??
      (await store.create({
        message,
        run: outcome.run,
        call: outcome.call,
        action,
        locale: context.locale,
        alwaysAllow,
        ...(resets !== undefined ? { resets } : {}),
      }));
    const record = existing ?? (await store.get(id));
    if (!existing) await this.#deps.scheduleExpiry(id, store.timeoutMs);
    const prompt = await outbound.sendApprovalPrompt(destinationOf(message), {
      approvalId: id,
      action,
      requesterName: message.userName,
      expiresAt: record?.expiresAt ?? Date.now() + store.timeoutMs,
      ...(alwaysAllow ? { alwaysAllow: true } : {}),
      locale: record?.locale ?? context.locale,
      ...(lead !== undefined ? { lead } : {}),
    });
    await store.setPrompt(id, prompt);
    // A decision may arrive while the prompt is still being posted (Discord adds its ✅/❌
    // reactions before `sendApprovalPrompt` returns); its job then found no prompt to close.
    const after = await store.get(id);
    if (after && after.status !== "pending")
      await this.#closePrompt(
        { ...after, prompt },
        outbound,
        after.status,
        after.always && this.#deps.grants ? this.#deps.grants.ttlMs : undefined,
      );
    this.#log.info({ approvalId: id, tool: outcome.call.name, toolUseId: outcome.call.toolUseId }, "approval asked");
    return id;
  }

  /**
   * The take of a decision or expiry job: is it current? `approved`/`declined` are acted on only
   * when the store says so (the job data alone never runs a tool); `expired` first makes the
   * pending → expired transition, and is skipped when a decision won. A redelivered job finds the
   * record deleted ({@link finish}) and is skipped.
   *
   * @param data - the job data; checked with {@link DecisionJobSchema} (invalid → `skipped`, logged).
   * @throws when Redis is unreachable.
   */
  async takeDecision(data: unknown): Promise<TakenDecision | Extract<HandledDecision, { status: "skipped" }>> {
    const parsed = DecisionJobSchema.safeParse(data);
    if (!parsed.success) {
      this.#log.error({ issues: parsed.error.issues.map((i) => i.path.join(".")) }, "invalid decision job; ignored");
      return { status: "skipped", reason: "invalid_job" };
    }
    const { approvalId, verdict } = parsed.data;
    const { store } = this.#deps;
    if (verdict === "expired") {
      const record = await store.expire(approvalId);
      if (record) return { record, verdict };
      const current = await store.get(approvalId);
      if (!current || current.status === "pending")
        return { status: "skipped", reason: current ? "not_current" : "unknown" };
      // A decision won the race (its own job handles it), or an earlier attempt of this job
      // made the transition and failed later: carry on only in the latter case.
      if (current.status !== "expired") return { status: "skipped", reason: "not_current" };
      return { record: current, verdict };
    }
    const record = await store.get(approvalId);
    if (!record) return { status: "skipped", reason: "unknown" };
    if (record.status !== verdict) {
      this.#log.warn(
        { approvalId, status: record.status, verdict },
        "decision job does not match the stored status; ignored",
      );
      return { status: "skipped", reason: "not_current" };
    }
    return { record, verdict, ...(parsed.data.reply ? { reply: parsed.data.reply } : {}) };
  }

  /**
   * Shows the decision on the prompt, once per approval (a retried job skips it: recorded with
   * `store.markStep("prompt")`), and counts it. A failed edit is logged, not thrown.
   */
  async closePrompt({ record, verdict }: TakenDecision, outbound: Outbound, toolbox: ToolBox): Promise<void> {
    if (record.steps.includes("prompt")) return;
    const granting = this.#grants(record, verdict, toolbox) !== undefined;
    await this.#closePrompt(record, outbound, verdict, granting ? this.#deps.grants!.ttlMs : undefined);
    await this.#deps.store.markStep(record.id, "prompt");
    metrics.approval(granting ? "always" : verdict);
  }

  /**
   * The compute of a decision: records an "always allow" grant first (requester × tool ×
   * conversation; not for a tool with `alwaysAllow: false`; once per approval), so the resumed
   * run's later calls of that tool need no prompt either; then resumes the run with the verdict
   * (an approved tool runs through {@link executeOnce}). After an expiry, further pending calls
   * are closed as expired too (the requester is away; no new prompt).
   *
   * @param deps - the run's dependencies, as the answer pipeline builds them for any run (its
   *   deadline's signal in `context`, streaming, usage).
   * @returns the outcome: an answer, or another paused call to ask about.
   * @throws as `resumeAgent`, and when Redis fails recording the grant.
   */
  async resume({ record, verdict }: TakenDecision, deps: ResumeDeps): Promise<AgentOutcome> {
    const grants = this.#grants(record, verdict, deps.toolbox);
    if (grants && !record.steps.includes("grant")) {
      const grant = await grants.grant({ ...conversationOf(record), userId: record.requesterId }, record.call.name);
      deps.tracer.event("approval", {
        verdict: "always",
        tool: record.call.name,
        toolUseId: record.call.toolUseId,
        grantExpiresAt: new Date(grant.expiresAt).toISOString(),
      });
      await this.#deps.store.markStep(record.id, "grant");
    }
    const resume = { ...deps, executeOnce: this.executeOnce };
    let outcome = await this.#deps.agent.resumeAgent(record.run, verdict, resume);
    while (outcome.kind === "approval" && verdict === "expired")
      outcome = await this.#deps.agent.resumeAgent(outcome.run, "expired", resume);
    return outcome;
  }

  /**
   * The line the answer to a taken decision starts with where its prompt stays as it was sent
   * (`outbound.promptsStayAsSent`: LINE, whose prompt cannot show the outcome): for a decision
   * that records an "always allow" grant, that the tool is now always allowed, for how long and
   * how to revoke it ({@link grantLeadText}, in the approval's language); undefined for any other
   * decision, and where the prompt is edited ({@link closePrompt} says it there). Never throws.
   */
  grantLead({ record, verdict }: TakenDecision, outbound: Outbound, toolbox: ToolBox): string | undefined {
    if (!outbound.promptsStayAsSent) return undefined;
    const grants = this.#grants(record, verdict, toolbox);
    return grants ? grantLeadText(record.action, grants.ttlMs, record.locale) : undefined;
  }

  /**
   * Whether the conversation of a taken decision was reset (`/reset`) since its approval was
   * asked (`ApprovalStore.resetSince`): then {@link closeReset} ends it instead of a resume.
   * @throws when Redis is unreachable.
   */
  async wasReset({ record }: TakenDecision): Promise<boolean> {
    return this.#deps.store.resetSince(record);
  }

  /**
   * Ends a decision or expiry whose conversation was reset since the approval was asked: the
   * prompt is closed like an expired one, saying that the conversation was reset (once per
   * approval, as {@link closePrompt}); nothing is resumed, so the tool does not run, no model is
   * called, nothing is sent and nothing reaches the history; the record is deleted without the
   * marker a decided approval leaves (`ApprovalStore.finish` with `reset`), also when the
   * requester had pressed before the reset: a later press finds nothing and is told "expired or
   * no longer exists", as the edited prompt says.
   * @throws when Redis is unreachable.
   */
  async closeReset({ record }: TakenDecision, outbound: Outbound): Promise<void> {
    if (!record.steps.includes("prompt")) {
      if (record.prompt) {
        try {
          await outbound.closeApprovalPrompt(
            record.prompt,
            "expired",
            outcomeText("reset", record.action, record.locale),
            record.locale,
          );
        } catch (err) {
          this.#log.warn({ err, approvalId: record.id }, "could not edit the approval prompt");
        }
      }
      await this.#deps.store.markStep(record.id, "prompt");
      metrics.approval("expired");
    }
    this.#log.info(
      { approvalId: record.id, tool: record.call.name },
      "approval closed: the conversation was reset since it was asked; the run is not resumed",
    );
    await this.#deps.store.finish(record.id, { reset: true });
  }

  /** Runs an approved call (and every write of a resumed run) at most once per `tool_use` id: `ApprovalStore.executeOnce`. */
  get executeOnce(): ExecuteOnce {
    return this.#deps.store.executeOnce;
  }

  /**
   * Deletes the approval record once its decision was answered (or asked about again, or failed
   * for good): a redelivered job then finds nothing to do, and a press on the prompt until its
   * expiry is still told how it was decided (`ApprovalStore.finish`).
   * @throws when Redis is unreachable.
   */
  async finish({ record }: TakenDecision): Promise<void> {
    await this.#deps.store.finish(record.id);
  }

  /**
   * What the requester reads when the decision job fails for good (the model or the platform
   * stayed down), in the record's locale: whether the action may have been done.
   */
  failureText({ record, verdict }: TakenDecision): string {
    return verdict === "approved"
      ? localize(
          record.locale,
          {
            "zh-TW":
              "抱歉，處理確認時出了問題（{action}），沒辦法完成回覆。動作可能已經執行，請先查看目前的狀態再試一次。",
            en:
              "Sorry, something went wrong while handling this ({action}), so I could not finish. It may " +
              "have been done already: please check before trying again.",
          },
          { action: record.action },
        )
      : localize(
          record.locale,
          {
            "zh-TW": "抱歉，處理確認時出了問題（{action}）。這個動作沒有執行，請稍後再試一次。",
            en: "Sorry, something went wrong while handling this ({action}). It was not done; please try again later.",
          },
          { action: record.action },
        );
  }

  /** The grant store when this decision records an "always allow" grant (approved with `always`, a tool that accepts grants), else undefined. */
  #grants(record: ApprovalRecord, verdict: ApprovalVerdict, toolbox: ToolBox): GrantStore | undefined {
    const grants = this.#deps.grants;
    return verdict === "approved" &&
      record.always &&
      grants !== undefined &&
      toolbox.get(record.call.name)?.alwaysAllow !== false
      ? grants
      : undefined;
  }

  /**
   * The key of `requester`'s pending hint on the conversations' Redis, to read with the
   * conversation's history when an answer begins (`ApprovalStore.pendingHintKey`); undefined when
   * the store writes no hints.
   */
  pendingHintKey(requester: RequesterRef): string | undefined {
    return this.#deps.store.pendingHintKey(requester);
  }

  /**
   * Closes the pending approval of the sender of `incoming` in its conversation as not confirmed,
   * because they wrote again there: the run is resumed with `superseded` and `callModel: false`
   * (every still pending call is closed, no model call), appended to history, and the prompt
   * edited (until its expiry, a press on it is told that a new message closed it, also where it
   * could not be edited: `ApprovalStore.finish`). Nothing is sent to the chat: the user has moved on;
   * where the prompt cannot be edited (`outbound.promptsStayAsSent`: LINE), the result carries the
   * line the answer to the new message starts with instead ({@link SupersededApproval.lead}). Call it before handling a new
   * message. Approvals of other people, and of the same person in another conversation (another
   * Telegram topic), stay open.
   *
   * @param incoming - the message about to be handled (its conversation, `userId` and
   *   `messageId`). If the pending approval was begun for this very message (the job is a retry
   *   after a crash past `begin`), its run is dropped instead of appended, since the retry runs
   *   the message again.
   * @param outbound - the outbound of the conversation (where the prompt is).
   * @param hint - the sender's pending hint as the worker read it ({@link pendingHintKey}; null: none,
   *   so nothing is read), or absent when it was not read.
   * @returns the closed approval, or undefined when none was pending.
   * @throws when Redis is unreachable, or what `resumeAgent` throws.
   */
  async supersedePending(
    incoming: RequesterRef & Pick<IncomingMessage, "messageId">,
    outbound: Outbound,
    hint?: string | null,
  ): Promise<SupersededApproval | undefined> {
    const { store } = this.#deps;
    const record = await store.supersede(incoming, hint);
    if (!record) return undefined;
    const another = incoming.messageId !== record.message.messageId;
    if (another) {
      const deps = await this.#deps.agentDeps(record.message);
      const resume = { ...deps, executeOnce: store.executeOnce, callModel: false };
      let outcome: AgentOutcome;
      try {
        outcome = await this.#deps.agent.resumeAgent(record.run, "superseded", resume);
        while (outcome.kind === "approval")
          outcome = await this.#deps.agent.resumeAgent(outcome.run, "superseded", resume);
      } finally {
        await deps.tracer.finish();
      }
      // Not after a /reset since the approval was asked: the run belongs to the forgotten conversation.
      if (outcome.kind === "answer")
        await this.#deps.appendHistory(
          record,
          outcome.messages,
          { messageId: record.message.messageId, text: outcome.text },
          record.resets,
        );
    }
    await this.#closePrompt(record, outbound, "superseded");
    await store.finish(record.id);
    return {
      approvalId: record.id,
      ...(another && outbound.promptsStayAsSent ? { lead: supersededLeadText(record.action, record.locale) } : {}),
    };
  }

  /** The pending approval of the sender of `message` in its conversation, when it is `toolUseId` of `message`. */
  async #pendingFor(message: IncomingMessage, toolUseId: string): Promise<ApprovalRecord | undefined> {
    const id = await this.#deps.store.pendingId(message);
    const record = id ? await this.#deps.store.get(id) : undefined;
    if (
      record?.status !== "pending" ||
      record.message.messageId !== message.messageId ||
      record.call.toolUseId !== toolUseId
    )
      return undefined;
    return record;
  }

  /** Edits the prompt to show the outcome; a failed edit is logged, not thrown (the run must still finish). */
  async #closePrompt(
    record: ApprovalRecord,
    outbound: Outbound,
    outcome: ApprovalVerdict,
    grantMs?: number,
  ): Promise<void> {
    if (!record.prompt) return;
    try {
      await outbound.closeApprovalPrompt(
        record.prompt,
        outcome,
        outcomeText(outcome, record.action, record.locale, grantMs),
        record.locale,
      );
    } catch (err) {
      this.#log.warn({ err, approvalId: record.id }, "could not edit the approval prompt");
    }
  }
}
