/**
 * Putting MCP into the running bot: a worker process connects the servers of the MCP config and
 * announces their tools; an adapter-only process lists what the workers announced.
 */
import type { RedisClient } from "../redis.js";
import type { Config } from "../config.js";
import type { Logger } from "../log.js";
import type { ToolBox } from "../toolbox/toolbox.js";
import { announceMcpTools, announcementOf, followMcpAnnouncements, type McpAnnouncement } from "./announce.js";
import { mcpConfigPath, readMcpConfig } from "./config.js";
import type { McpConnectionOptions } from "./connection.js";
import { McpToolSource, warnCrowdedContexts } from "./source.js";

/** Options of {@link startWorkerMcp}. */
export interface WorkerMcpOptions {
  config: Config;
  log: Logger;
  /** The worker's connection, for the announcement. */
  redis: RedisClient;
  /** Every loaded tool; the MCP tools are added to it. */
  toolbox: ToolBox;
  /** Connection options (tests: a short reconnection backoff). */
  connection?: Pick<McpConnectionOptions, "reconnectDelaysMs" | "connectTimeoutMs" | "listChangedIntervalMs">;
}

/**
 * Starts the MCP servers of `MCP_CONFIG` (or `mcp.json` at the project root) in the background
 * (`McpToolSource.startInBackground`): the worker takes jobs at once, each server's tools join
 * `toolbox` when it is up. Announces the MCP tools in Redis now (an empty list when there is no
 * MCP config) and after every change; warns once every server has connected or been skipped when
 * a chat would get more than 10 tools.
 *
 * @returns the source (undefined without an MCP config), `connected` (settles once every server
 *   has connected or been skipped; never rejects), `stopping()`, to call as the bot begins to stop
 *   (a server that exits from then on is not reported as lost nor reconnected), and `close()`,
 *   which stops the servers.
 * @throws {McpConfigError} when the file is unreadable or malformed. Servers that fail are only skipped.
 */
export async function startWorkerMcp(
  options: WorkerMcpOptions,
): Promise<{ source?: McpToolSource; connected: Promise<void>; stopping: () => void; close: () => Promise<void> }> {
  const { config, log, redis, toolbox } = options;
  const announce = (announcement: McpAnnouncement) =>
    announceMcpTools(redis, announcement).catch((err: unknown) => log.warn({ err }, "announcing the MCP tools failed"));
  const file = mcpConfigPath(config.MCP_CONFIG);
  if (!file) {
    await announce({ at: Date.now(), tools: [], skipped: [] });
    return { connected: Promise.resolve(), stopping: () => {}, close: async () => {} };
  }
  const source: McpToolSource = new McpToolSource({
    config: readMcpConfig(file),
    toolbox,
    log,
    connection: options.connection,
    onChange: () => void announce(announcementOf(source)),
  });
  const connected = source.startInBackground().then(() => void warnCrowdedContexts(toolbox, source, log));
  await announce(announcementOf(source));
  return { source, connected, stopping: () => source.stopping(), close: () => source.close() };
}

/**
 * The tools an adapter-only process lists: `files` plus the MCP tools announced by the workers,
 * refreshed every 30 s. Never connects to an MCP server.
 */
export function adapterToolbox(
  redis: RedisClient,
  files: ToolBox,
  log: Logger,
): { current: () => ToolBox; stop: () => void } {
  const follower = followMcpAnnouncements(redis, files, log);
  void follower.refresh();
  return follower;
}
