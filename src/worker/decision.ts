/**
 * A decision on an approval through the answer pipeline (`pipeline.ts`): its *take* (the decision
 * or expiry job checked against the approval record, the outcome shown on the prompt) and its
 * *compute* (the run resumed with the verdict — or, when an earlier attempt saved a checkpoint of
 * the resumed run before a later write, from that checkpoint). Restore, persist, delivery, the
 * deadline, streaming, typing and retries are the fresh message's, so a retried decision job
 * appends its run once and sends only the chunks not yet sent.
 *
 * The answer's progress keys are its own (`<message id>~<approval id>`: a run may pause more
 * than once), its run tag in the history is the message's id (a message has one answer).
 */
import { UnrecoverableError, type Job } from "bullmq";
import type { HandledDecision, TakenDecision } from "../approvals/flow.js";
import { conversationKey } from "../queue/incoming.js";
import { toolboxFor } from "../toolbox/select.js";
import { compute } from "./compute.js";
import {
  answer,
  freshCrashed,
  outboundFor,
  type AnswerParts,
  type AnswerState,
  type Computed,
  type JobAttempt,
} from "./pipeline.js";

/**
 * Processes one job of the `decisions` queue (its data as the decider or the expiry queued it).
 *
 * @returns what became of it: answered (the text), asked again (another dangerous call of the run),
 *   or skipped (not current, unknown, invalid, or its conversation was reset since the approval was asked: prompt closed, nothing run).
 * @throws to retry the job: Redis unreachable, a transient failure before the job's last attempt
 *   and the answer's deadline, no outbound for the platform in this worker; an `UnrecoverableError`
 *   (BullMQ then marks the job failed at once) when the answer failed for good — the requester
 *   was told and the record deleted.
 */
export async function answerDecision(
  parts: AnswerParts,
  job: Pick<Job, "data" | "attemptsMade" | "attemptsStarted" | "opts">,
): Promise<HandledDecision> {
  const flow = parts.approvals;
  if (!flow) {
    parts.log.warn({ data: job.data as unknown }, "a decision arrived, but no approval store is configured; ignored");
    return { status: "skipped", reason: "invalid_job" };
  }
  const taken = await flow.takeDecision(job.data);
  if ("status" in taken) return taken;
  const { record } = taken;
  const attempt: JobAttempt = {
    made: job.attemptsMade,
    allowed: job.opts.attempts ?? 1,
    resumed: job.attemptsStarted > 1,
    freshCrashed: freshCrashed(job),
  };
  const outbound = outboundFor(parts, record.platform, attempt);
  if (!outbound) return { status: "skipped", reason: "not_current" };
  // `/reset` since the approval was asked: the prompt is closed, nothing resumed (unless an earlier
  // attempt already showed the verdict and resumed the run: it goes on, and its append is refused).
  if (!record.steps.includes("prompt") && (await flow.wasReset(taken))) {
    await flow.closeReset(taken, outbound);
    return { status: "skipped", reason: "reset" };
  }
  await flow.closePrompt(taken, outbound, toolboxFor(parts.toolbox, record.message));
  // The answer goes out with the press's own reply token (LINE) when the decision brought one:
  // the requester's message's token was spent on the prompt.
  const message = taken.reply
    ? { ...record.message, reply: { ...record.message.reply, ...taken.reply } }
    : record.message;
  const done = await answer(
    parts,
    {
      kind: "decision",
      message,
      outbound,
      answerId: `${record.message.messageId}~${record.id}`,
      runId: `${conversationKey(record.message)}:${record.message.messageId}:approval`,
      compute: (state) => computeDecision(parts, state, taken),
      failureText: () => flow.failureText(taken),
      settle: () => flow.finish(taken),
      ...(record.resets !== undefined ? { resets: record.resets } : {}),
    },
    attempt,
  );
  await done.tracer.finish();
  // The answer is over (a chat job's finish script does this for messages): its sent count and start time go.
  await parts.redis.del(done.keys.sent, done.keys.started);
  // Failed for good (the requester was told, the record deleted): the job is marked failed, not retried.
  if (done.failure !== undefined)
    throw new UnrecoverableError(done.failure instanceof Error ? done.failure.message : String(done.failure));
  const result = done.result;
  if (result && "asked" in result && result.asked !== undefined)
    return { status: "asked_again", approvalId: result.asked };
  return { status: "answered", text: result && "answered" in result ? result.answered : "" };
}

/**
 * The compute of a decision: the one compute step (`compute.ts`) on the paused run's own history,
 * resumed with the verdict (`ApprovalFlow.resume`) — or from the checkpoint an earlier attempt of
 * this decision saved — with the conversation's settings as they are now (model, persona, language).
 * Where the prompt stays as it was sent (LINE), an answer after an "always allow" press starts with
 * the grant's line (`ApprovalFlow.grantLead`).
 */
function computeDecision(parts: AnswerParts, state: AnswerState, taken: TakenDecision): Promise<Computed> {
  const flow = parts.approvals!;
  const { record } = taken;
  return compute(parts, state, {
    message: record.message,
    userText: record.message.text,
    executeOnce: flow.executeOnce,
    history: { messages: record.run.history, resume: (deps) => flow.resume(taken, deps) },
    // Where the prompt cannot show the outcome (LINE), an "always allow" grant is said first.
    lead: () => flow.grantLead(taken, state.taken.outbound, toolboxFor(parts.toolbox, record.message)),
    resuming: "resuming the run an earlier attempt of this decision saved before it changed data",
  });
}
