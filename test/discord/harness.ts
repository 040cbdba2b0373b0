/**
 * A Discord test harness: the fake Discord servers, the real adapter (discord.js) pointed at
 * them, and a small in-test AdapterContext (an array of enqueued messages, a real ToolBox, a
 * Map-backed ApprovalDecider).
 */
import { z } from "zod";
import { createAdapter } from "../../adapters/discord/index.js";
import type { Adapter, AdapterContext } from "../../src/adapter.js";
import type { ApprovalDecider, DecisionRequest, DecisionResult } from "../../src/approvals/decider.js";
import type { ConversationRef, IncomingMessage } from "../../src/queue/incoming.js";
import { defineTool } from "../../src/toolbox/tool.js";
import { ToolBox } from "../../src/toolbox/toolbox.js";
import { FakeDiscord, type FakeDiscordOptions } from "../fakes/discord.js";
import type { CommandRunner } from "../../src/commands/runner.js";
import { testAdapterParts, testCommands } from "../helpers/commands.js";
import { testConfig } from "../helpers/config.js";
import { captureLogger } from "../helpers/log.js";

/** Tools for `/tools`: two tags, one dangerous. */
export const testToolbox = new ToolBox([
  defineTool({
    name: "get_time",
    description: "Current time in a time zone.\nSecond line not shown.",
    tags: ["info"],
    input: z.object({}),
    run: () => "12:00",
  }),
  defineTool({
    name: "add_todo",
    description: "Add a todo for the user.",
    tags: ["todo"],
    input: z.object({ text: z.string() }),
    run: () => "ok",
  }),
  defineTool({
    name: "delete_todo",
    description: "Delete one of the user's todos.",
    tags: ["todo"],
    dangerous: true,
    input: z.object({ id: z.number() }),
    run: () => "deleted",
  }),
]);

/** A Map-backed ApprovalDecider, ordered as the store's: first valid decision wins; a decided one is said so to anyone; only the requester may decide. */
export class MapDecider implements ApprovalDecider {
  readonly approvals = new Map<string, { requesterId: string; requesterName: string; decided?: boolean }>();
  readonly calls: { request: DecisionRequest; result: DecisionResult }[] = [];
  async decide(request: DecisionRequest): Promise<DecisionResult> {
    const a = this.approvals.get(request.approvalId);
    let result: DecisionResult;
    if (!a) result = { status: "not_found" };
    else if (a.decided !== undefined) result = { status: "already_decided" };
    else if (a.requesterId !== request.deciderId) result = { status: "not_requester", requesterName: a.requesterName };
    else {
      a.decided = request.approve;
      result = { status: "accepted", approve: request.approve };
    }
    this.calls.push({ request, result });
    return result;
  }
}

/** Everything a Discord test needs. */
export interface Harness {
  fake: FakeDiscord;
  adapter: Adapter;
  context: AdapterContext;
  enqueued: IncomingMessage[];
  resets: ConversationRef[];
  decider: MapDecider;
  logLines: () => Record<string, unknown>[];
  /** Makes the next enqueue calls throw this error (undefined: succeed). */
  failEnqueue: (error: Error | undefined) => void;
  /** Stops the adapter and starts a new one (a new discord.js Client, empty caches) on the same fake and context, as after a process restart. */
  restartAdapter: () => Promise<void>;
  stop: () => Promise<void>;
}

/** Starts the fake and the adapter; the adapter is ready (guilds received, commands registered). */
export async function startHarness(
  options: { fake?: FakeDiscordOptions; env?: Record<string, string> } = {},
): Promise<Harness> {
  const fake = await FakeDiscord.start(options.fake);
  const { log, lines } = captureLogger("debug");
  const config = testConfig({
    DISCORD_TOKEN: fake.token,
    DISCORD_API_URL: fake.apiUrl,
    DISCORD_GUILD_ID: fake.guildId,
    ...options.env,
  });
  const enqueued: IncomingMessage[] = [];
  const resets: ConversationRef[] = [];
  const decider = new MapDecider();
  let enqueueError: Error | undefined;
  const context: AdapterContext = {
    config,
    log,
    enqueue: async (m) => {
      if (enqueueError) throw enqueueError;
      enqueued.push(m);
    },
    resetConversation: async (chat) => {
      resets.push(chat);
      return [];
    },
    toolboxFor: () => testToolbox,
    commands: undefined as unknown as CommandRunner,
    ...({} as Pick<AdapterContext, "press" | "decide" | "repliesToAll">),
  };
  // Late-bound, so a test that swaps `context.resetConversation` changes what /reset does.
  context.commands = testCommands(config, {
    toolboxFor: () => testToolbox,
    resetConversation: (chat) => context.resetConversation(chat),
    log,
  });
  Object.assign(context, testAdapterParts(config, decider, context.commands, log));
  const adapter = createAdapter(config, log);
  await adapter.start(context);
  const harness: Harness = {
    fake,
    adapter,
    context,
    enqueued,
    resets,
    decider,
    logLines: () =>
      lines.flatMap((l) => l.split("\n").filter(Boolean)).map((l) => JSON.parse(l) as Record<string, unknown>),
    failEnqueue: (e) => (enqueueError = e),
    restartAdapter: async () => {
      await harness.adapter.stop();
      harness.adapter = createAdapter(config, log);
      await harness.adapter.start(context);
    },
    stop: async () => {
      await harness.adapter.stop();
      await fake.close();
    },
  };
  return harness;
}
