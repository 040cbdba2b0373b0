/**
 * What a run of the agent loop gets for a message: the per-call tool context (who asked, where,
 * in which locale and time zone, the answer's abort signal) and the loop's dependencies (the
 * client, the toolbox of the chat's context, the tracer, grants). Built the same way for a new
 * run, for a run resumed after an approval, and for the approval flow's runs without a model call.
 */
import type Anthropic from "@anthropic-ai/sdk";
import type { ResumeDeps } from "../agent/loop.js";
import type { AgentDeps } from "../agent/contract.js";
import { grantLookup, grantStoreFor } from "../approvals/grants.js";
import type { Config } from "../config.js";
import type { Logger } from "../log.js";
import { memoryBlock } from "../memory/notes.js";
import { MemoryStore, memoryScopeOf, type MemoryFile, type MemoryScope } from "../memory/store.js";
import { MEMORY_TOOL_NAME } from "../memory/tool.js";
import { conversationOf, type IncomingMessage } from "../queue/incoming.js";
import type { RedisClient } from "../redis.js";
import { SettingsStore, type Settings } from "../settings/store.js";
import { toolboxFor } from "../toolbox/select.js";
import type { ToolContext } from "../toolbox/tool.js";
import type { ToolBox } from "../toolbox/toolbox.js";
import type { RunTracer } from "../trace/tracer.js";
import { budgetGuard } from "../usage/budget.js";
import type { UsageStore } from "../usage/store.js";

/**
 * The tool context for `message`: its platform, chat and sender, the locale (the conversation's
 * `language` setting when given, else `BOT_LOCALE`) and `TIMEZONE`, the shared Redis connection,
 * and `signal` (a fresh one when not given).
 */
export function toolContextFor(
  message: IncomingMessage,
  parts: { config: Config; redis: RedisClient; log: Logger; signal?: AbortSignal; locale?: ToolContext["locale"] },
): ToolContext {
  return {
    platform: message.platform,
    chatId: message.chatId,
    chatKind: message.chatKind,
    ...((message.topicId ?? message.reply?.threadId) ? { topicId: message.topicId ?? message.reply.threadId } : {}),
    ...(message.reply?.guildId ? { guildId: message.reply.guildId } : {}),
    userId: message.userId,
    userName: message.userName,
    locale: parts.locale ?? parts.config.BOT_LOCALE,
    timezone: parts.config.TIMEZONE,
    signal: parts.signal ?? new AbortController().signal,
    log: parts.log,
    redis: parts.redis,
    config: parts.config,
  };
}

/** The worker's parts a run needs. */
export interface RunParts {
  config: Config;
  /** Connection for the tools and the grants. */
  redis: RedisClient;
  /** Every loaded tool; the run gets `toolboxFor(toolbox, message)`. */
  toolbox: ToolBox;
  client: Anthropic;
  /**
   * Where usage is recorded and read: with it every run checks the daily budgets before each
   * model call (`budgetGuard`, `src/usage/budget.ts`); without it (no usage store) none.
   */
  usage?: UsageStore | undefined;
}

/** What one run adds to the {@link RunParts}. */
export interface RunOptions extends Pick<
  AgentDeps,
  "executeOnce" | "checkpoint" | "onUsage" | "onEvent" | "retryUntil" | "onModelBusy" | "stop"
> {
  tracer: RunTracer;
  log: Logger;
  /** The answer's deadline (aborts the model call and the tools); default a signal that never fires. */
  signal?: AbortSignal;
  /** The conversation's settings (persona, model, language); default every default. */
  settings?: Settings;
  /** Resolves once the run's usage recordings so far (`onUsage`) are in Redis: the budget check awaits it. Default: none in flight. */
  usageSettled?: () => Promise<unknown>;
  /**
   * The files of the message's memory scope, read with the answer's other reads when it began
   * (`readAtStart` of `pipeline.ts`): the first run's memory block is built from them; a later run
   * with these deps (the context-window rescue) reads the scope again. Default: read when the run starts.
   */
  memoryFiles?: readonly MemoryFile[];
}

/**
 * The loop's dependencies for a run answering `message`: the toolbox of its context (platform and
 * chat kind), its tool context, the requester's "always allow" grants in its conversation, the
 * conversation's settings (its model, its persona in the system prompt, its language as the tool
 * context's locale), when the toolbox has the memory tool (`MEMORY=on`) the memory of the message's
 * scope (`memoryScopeOf`: the speaker's own in a private chat, the group's in a group, read when the
 * run starts calling the model), and with a usage store the requester's daily budgets checked
 * before every model call (`beforeModelCall`: `budgetGuard` of `src/usage/budget.ts`), so every run
 * built here, fresh, resumed after an approval or started by other code, stops at a spent budget.
 * A conversation whose chosen model the API no longer serves gets `ANTHROPIC_MODEL` as its `model`
 * setting (`onModelGone`), so its people are told once.
 */
export function runDeps(parts: RunParts, message: IncomingMessage, run: RunOptions): ResumeDeps {
  const { config, redis } = parts;
  const { settings } = run;
  const toolbox = toolboxFor(parts.toolbox, message);
  const scope = memoryScopeOf(message);
  return {
    client: parts.client,
    config,
    toolbox,
    ...(toolbox.get(MEMORY_TOOL_NAME) ? { memory: memoryReader(redis, scope, run) } : {}),
    tracer: run.tracer,
    ...(settings ? { model: settings.model } : {}),
    // A chosen model the API no longer serves: the conversation keeps ANTHROPIC_MODEL from now on (told once).
    onModelGone: (_gone, fallback) => {
      new SettingsStore(redis, config, run.log)
        .set(conversationOf(message), "model", fallback)
        .catch((err: unknown) => run.log.warn({ err }, "could not keep the fallback model for the conversation"));
    },
    ...(settings?.persona ? { persona: settings.persona } : {}),
    context: toolContextFor(message, {
      config,
      redis,
      log: run.log,
      ...(run.signal ? { signal: run.signal } : {}),
      ...(settings ? { locale: settings.language } : {}),
    }),
    grantFor: grantLookup(grantStoreFor(redis, config, run.log), message),
    // A budget spent mid-run is said in the conversation's language.
    ...(parts.usage
      ? {
          beforeModelCall: budgetGuard(
            parts.usage,
            settings ? { ...config, BOT_LOCALE: settings.language } : config,
            message,
            run.usageSettled,
          ),
        }
      : {}),
    ...(run.executeOnce ? { executeOnce: run.executeOnce } : {}),
    ...(run.checkpoint ? { checkpoint: run.checkpoint } : {}),
    ...(run.onUsage ? { onUsage: run.onUsage } : {}),
    ...(run.onEvent ? { onEvent: run.onEvent } : {}),
    ...(run.retryUntil !== undefined ? { retryUntil: run.retryUntil } : {}),
    ...(run.onModelBusy ? { onModelBusy: run.onModelBusy } : {}),
    ...(run.stop ? { stop: run.stop } : {}),
  };
}

/** The memory block of `scope` for each run: the files read ahead (`run.memoryFiles`) once, then read anew. */
function memoryReader(redis: RedisClient, scope: MemoryScope, run: RunOptions): () => Promise<string | undefined> {
  let ahead = run.memoryFiles;
  return async () => {
    const files = ahead ?? (await new MemoryStore(redis, { log: run.log }).read(scope));
    ahead = undefined;
    return memoryBlock(scope, files);
  };
}
