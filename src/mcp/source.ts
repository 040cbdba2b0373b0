/**
 * MCP servers as a tool source: connects every server of the MCP config (in parallel), registers
 * each server's tools in the one toolbox (`<server>__<tool>`), keeps them current on
 * `tools/list_changed` and after reconnections, and closes the connections (stopping stdio child
 * processes) on shutdown. Only workers (and `npm run tools`) start it; adapters read what the
 * workers announce (`announce.ts`).
 */
import type { Tool as McpTool } from "@modelcontextprotocol/sdk/types.js";
import { silentLogger, type Logger } from "../log.js";
import { ToolRegistryError, validateTool } from "../toolbox/registry.js";
import { countedTools, CROWDED_ADVICE, crowdedChats } from "../toolbox/select.js";
import { MAX_TOOLS_PER_REQUEST, type ToolBox } from "../toolbox/toolbox.js";
import type { McpConfig, McpServerConfig } from "./config.js";
import { McpConnection, type McpConnectionOptions } from "./connection.js";
import { MCP_MAX_DESCRIPTION_CHARS, MCP_MAX_TOOLS_PER_SERVER } from "./limits.js";
import {
  isWantedMcpTool,
  mcpSource,
  mcpToolNeeds,
  toolFromMcp,
  type McpBackedTool,
  type McpToolNeeds,
} from "./tools.js";

/**
 * Why a tool whose `execution.taskSupport` is `"required"` is left out: it can only be called as an
 * MCP task (`tools/call` with a `task` parameter, then `tasks/get` / `tasks/result`; MCP
 * 2025-11-25, experimental in the SDK), and the bot calls tools directly; offered, it would be
 * approved and then refused by the SDK client.
 */
export const TASK_REQUIRED_REASON =
  'it can only be run as an MCP task (its execution.taskSupport is "required"), which the bot does not support';

/** A server left out (its config, its start or its tool list failed), with the reason. */
export interface SkippedMcpServer {
  server: string;
  reason: string;
}

/**
 * An MCP tool left out, with the reason: its schema is too large, cannot be made acceptable to
 * the Messages API or cannot be compiled; its name is taken; it can only run as an MCP task
 * ({@link TASK_REQUIRED_REASON}); or its server lists more than {@link MCP_MAX_TOOLS_PER_SERVER} tools.
 */
export interface SkippedMcpTool {
  server: string;
  tool: string;
  reason: string;
}

/** Options of {@link McpToolSource}. */
export interface McpToolSourceOptions {
  config: McpConfig;
  /** The toolbox of every tool (the worker's root toolbox); MCP tools are added to and removed from it. */
  toolbox: ToolBox;
  log?: Logger;
  /**
   * Called after the registered MCP tools changed (a reconnection, `list_changed`) once
   * {@link McpToolSource.start} has finished; never while it runs (the caller announces the
   * result of `start()` itself, and a start that fails must announce nothing).
   */
  onChange?: () => void;
  /** Passed to each connection (tests: shorter backoff). */
  connection?: Pick<McpConnectionOptions, "reconnectDelaysMs" | "connectTimeoutMs" | "listChangedIntervalMs">;
}

/** The MCP servers of one process and the tools they registered. */
export class McpToolSource {
  readonly #options: McpToolSourceOptions;
  readonly #log: Logger;
  readonly #connections = new Map<string, McpConnection>();
  readonly #registered = new Map<string, McpBackedTool[]>();
  readonly #skippedTools = new Map<string, SkippedMcpTool[]>();
  #skipped: SkippedMcpServer[] = [];
  /** Servers whose config names were already checked against their tool list (warned once). */
  readonly #namesChecked = new Set<string>();
  readonly #nameWarnings: string[] = [];
  /** Every warning about the servers' tools (names, limits, weakened needs), for `npm run tools`. */
  readonly #warnings: string[] = [];
  /** Warnings already given, by a key naming what they are about (each is given once per process). */
  readonly #warned = new Set<string>();
  /**
   * The strictest needs seen of each tool (`<server>\0<tool>`) since this process started: a
   * `list_changed` that makes a tool need less keeps what it needed before.
   */
  readonly #needsSeen = new Map<string, McpToolNeeds>();
  /** Name clashes found while starting: start-up stops with them. */
  #startProblems: string[] | undefined;
  /** True once start() succeeded, or from startInBackground(): only then do changes reach `onChange`. */
  #started = false;
  /** True once close() was called. */
  #closed = false;
  /** True once stopping() was called. */
  #stopping = false;

  constructor(options: McpToolSourceOptions) {
    this.#options = options;
    this.#log = options.log ?? silentLogger;
  }

  /**
   * Connects every server and registers its tools. A server that cannot start or list its tools
   * is skipped with one warning naming it and the reason; the others go on.
   *
   * @throws {ToolRegistryError} naming both sources when an MCP tool's name is taken by a tool of
   *   `tools/` (the connections are closed first). Two MCP tools with one name only skip the later
   *   one, with a warning: nobody can rename a third-party server's tools.
   */
  async start(): Promise<void> {
    this.#startProblems = [];
    this.#skipConfigProblems();
    await Promise.all(this.#options.config.servers.map((server) => this.#startServer(server)));
    const problems = this.#startProblems;
    this.#startProblems = undefined;
    if (problems.length > 0) {
      await this.close();
      throw new ToolRegistryError(problems);
    }
    this.#started = true;
  }

  /**
   * Connects every server in the background and returns at once, so a slow or dead server never
   * holds back the worker: chats are answered with the tools that are ready, and each server's
   * tools join the toolbox when it is up (one log line naming the server and its tools; `onChange`
   * is called). A server that cannot start is skipped with one warning. A name clash with a tool
   * of `tools/` leaves the MCP tool out, with the reason (start-up is not stopped: it is over).
   *
   * @returns a promise that settles once every server has connected or been skipped (never rejects).
   */
  startInBackground(): Promise<void> {
    this.#skipConfigProblems();
    this.#started = true;
    return Promise.all(this.#options.config.servers.map((server) => this.#startServer(server))).then(() => {});
  }

  /** The servers the config itself leaves out (each with one warning). */
  #skipConfigProblems(): void {
    this.#skipped = this.#options.config.skipped.map((s) => ({ ...s }));
    for (const s of this.#skipped) this.#warnSkipped(s);
  }

  async #startServer(server: McpServerConfig): Promise<void> {
    const connection: McpConnection = new McpConnection(server, {
      log: this.#log,
      onTools: (tools) => this.#register(server, connection, tools),
      ...this.#options.connection,
    });
    // Kept from the start, so close() stops a server that is still connecting.
    this.#connections.set(server.name, connection);
    if (this.#stopping) connection.stopping();
    try {
      await connection.start();
      this.#log.info(
        { mcpServer: server.name, tools: (this.#registered.get(server.name) ?? []).map((t) => t.name) },
        `MCP server ${server.name} connected`,
      );
    } catch (error) {
      this.#connections.delete(server.name);
      this.#unregister(server.name);
      if (this.#closed) return; // the source was closed while the server was connecting
      const skipped = { server: server.name, reason: (error as Error).message };
      this.#skipped.push(skipped);
      this.#warnSkipped(skipped);
      if (this.#started) this.#options.onChange?.();
    }
  }

  #warnSkipped(skipped: SkippedMcpServer): void {
    this.#log.warn(
      { mcpServer: skipped.server, reason: skipped.reason },
      `MCP server ${skipped.server} skipped: ${skipped.reason}`,
    );
  }

  /**
   * Replaces the server's tools in the toolbox with `tools` (filtered by include/exclude, at most
   * {@link MCP_MAX_TOOLS_PER_SERVER}). The new tools are built first — their schemas compiled in
   * the schema checker's thread, so other chats are served meanwhile — and then swapped in at once.
   */
  async #register(server: McpServerConfig, connection: McpConnection, tools: McpTool[]): Promise<void> {
    const { toolbox } = this.#options;
    const skipped: SkippedMcpTool[] = [];
    let wanted = tools.filter((t) => isWantedMcpTool(server, t.name));
    if (wanted.length > MCP_MAX_TOOLS_PER_SERVER) {
      for (const t of wanted.slice(MCP_MAX_TOOLS_PER_SERVER))
        skipped.push({
          server: server.name,
          tool: t.name,
          reason: `its server lists more than ${MCP_MAX_TOOLS_PER_SERVER} tools`,
        });
      this.#warnOnce(
        `tools:${server.name}`,
        server.name,
        `MCP server ${server.name} lists ${wanted.length} tools; only the first ` +
          `${MCP_MAX_TOOLS_PER_SERVER} are used. Keep the ones you need with "include" in the MCP ` +
          `config`,
      );
      wanted = wanted.slice(0, MCP_MAX_TOOLS_PER_SERVER);
    }
    const built: { tool: McpBackedTool; mcpName: string }[] = [];
    for (const mcpTool of wanted) {
      if (mcpTool.execution?.taskSupport === "required") {
        skipped.push({ server: server.name, tool: mcpTool.name, reason: TASK_REQUIRED_REASON });
        continue;
      }
      let tool: McpBackedTool;
      try {
        tool = await toolFromMcp(server, mcpTool, connection, { needs: this.#needs(server, mcpTool) });
      } catch (error) {
        skipped.push({ server: server.name, tool: mcpTool.name, reason: (error as Error).message });
        continue;
      }
      const invalid = validateTool(tool);
      if (invalid.length > 0) {
        skipped.push({ server: server.name, tool: mcpTool.name, reason: invalid.join("; ") });
        continue;
      }
      if ((mcpTool.description?.trim().length ?? 0) > MCP_MAX_DESCRIPTION_CHARS) {
        this.#warnOnce(
          `description:${server.name}\0${mcpTool.name}`,
          server.name,
          `MCP server ${server.name}: the description of "${mcpTool.name}" has ` +
            `${mcpTool.description!.trim().length} characters; the model gets the first ` +
            `${MCP_MAX_DESCRIPTION_CHARS}`,
        );
      }
      built.push({ tool, mcpName: mcpTool.name });
    }
    if (connection.state === "closed") return;
    this.#unregister(server.name);
    const added: McpBackedTool[] = [];
    for (const { tool, mcpName } of built) {
      const existing = toolbox.get(tool.name);
      if (existing) {
        const here = `${mcpSource(server.name)} (tool "${mcpName}")`;
        if ("mcp" in existing) {
          // Two MCP tools: the operator cannot rename a server's tools, so the later one is left out.
          const first = existing as McpBackedTool;
          skipped.push({
            server: server.name,
            tool: mcpName,
            reason:
              `tool name "${tool.name}" is already taken by ${mcpSource(first.mcp.server)} (tool "` +
              `${first.mcp.tool}"); leave one out with "exclude" in the MCP config`,
          });
        } else {
          const problem =
            `tool name "${tool.name}" is defined twice: in ${existing.source ?? existing.file} and in ` +
            `${here}; rename one, or leave one out with "exclude" in the MCP config`;
          if (this.#startProblems) this.#startProblems.push(problem);
          else skipped.push({ server: server.name, tool: mcpName, reason: problem });
        }
        continue;
      }
      toolbox.add(tool);
      added.push(tool);
    }
    for (const s of skipped)
      this.#log.warn(
        { mcpServer: s.server, tool: s.tool, reason: s.reason },
        `MCP tool ${s.server}/${s.tool} skipped: ${s.reason}`,
      );
    if (!this.#namesChecked.has(server.name)) {
      this.#namesChecked.add(server.name);
      for (const warning of unknownToolNames(server, tools)) {
        this.#nameWarnings.push(warning);
        this.#warnings.push(warning);
        this.#log.warn({ mcpServer: server.name }, warning);
      }
    }
    this.#registered.set(server.name, added);
    this.#skippedTools.set(server.name, skipped);
    if (this.#started) this.#options.onChange?.();
  }

  /**
   * What a call of the tool needs now: {@link mcpToolNeeds}, but never less than the first time
   * this process saw the tool. A tool whose server now claims it needs less (e.g. read-only after
   * a `list_changed`) keeps the stricter need until the worker restarts, with one warning.
   */
  #needs(server: McpServerConfig, tool: McpTool): McpToolNeeds {
    const key = `${server.name}\0${tool.name}`;
    const now = mcpToolNeeds(server, tool);
    const before = this.#needsSeen.get(key);
    const weaker = before !== undefined && ((before.dangerous && !now.dangerous) || (!before.readOnly && now.readOnly));
    const kept: McpToolNeeds = weaker
      ? {
          dangerous: before.dangerous || now.dangerous,
          readOnly: before.readOnly && now.readOnly,
          why: `${before.why}; kept from when the worker first saw it, although the server now claims less`,
        }
      : now;
    if (!weaker || !this.#needsSeen.has(key)) this.#needsSeen.set(key, kept);
    if (weaker) {
      const was = kept.dangerous ? "asks for approval" : "runs at most once per call";
      this.#warnOnce(
        `needs:${key}`,
        server.name,
        `MCP server ${server.name}: tool "${tool.name}" now claims to need less than when the ` +
          `worker first saw it (its annotations changed); it still ${was} until the worker restarts`,
      );
    }
    return kept;
  }

  /** Logs `message` as a warning naming `server`, once per `key`, and keeps it for {@link McpToolSource.warnings}. */
  #warnOnce(key: string, server: string, message: string): void {
    if (this.#warned.has(key)) return;
    this.#warned.add(key);
    this.#warnings.push(message);
    this.#log.warn({ mcpServer: server }, message);
  }

  #unregister(server: string): void {
    for (const tool of this.#registered.get(server) ?? []) {
      if (this.#options.toolbox.get(tool.name) === tool) this.#options.toolbox.remove(tool.name);
    }
    this.#registered.delete(server);
  }

  /** The registered MCP tools, by server name (servers in config order). */
  tools(): { server: string; tools: McpBackedTool[] }[] {
    return this.#options.config.servers
      .filter((s) => this.#registered.has(s.name))
      .map((s) => ({ server: s.name, tools: [...this.#registered.get(s.name)!] }));
  }

  /** Servers left out, with the reason. */
  get skipped(): SkippedMcpServer[] {
    return [...this.#skipped];
  }

  /**
   * Warnings about tool names in a server's `include` / `exclude` / `safe` / `noAlwaysAllow` that
   * match none of its tools (a typo), or `safe` names that `include` leaves out; English
   * sentences, once per server (checked at its first tool list).
   */
  get nameWarnings(): string[] {
    return [...this.#nameWarnings];
  }

  /**
   * Every warning about the servers' tools since start: {@link nameWarnings}, and the limits and
   * weakened needs (a tool list over {@link MCP_MAX_TOOLS_PER_SERVER}, a description cut, a tool
   * that kept its stricter need); English sentences naming the server, each once.
   */
  get warnings(): string[] {
    return [...this.#warnings];
  }

  /** Tools of connected servers left out, with the reason. */
  get skippedTools(): SkippedMcpTool[] {
    return [...this.#skippedTools.values()].flat();
  }

  /**
   * Says that the bot is stopping, as the stop begins: a connection that drops from now on (a
   * stdio server that got the terminal's Ctrl-C with the bot) is neither reported as lost nor
   * reconnected (`McpConnection.stopping`); the tools still work while their server is up.
   * {@link close} follows. Never throws.
   */
  stopping(): void {
    this.#stopping = true;
    for (const connection of this.#connections.values()) connection.stopping();
  }

  /** Closes every connection (stops stdio child processes) and removes the tools; not reported as lost connections. Never throws. */
  async close(): Promise<void> {
    this.#started = false;
    this.#closed = true;
    const connections = [...this.#connections.values()];
    this.#connections.clear();
    await Promise.all(connections.map((c) => c.close()));
    for (const server of [...this.#registered.keys()]) this.#unregister(server);
  }
}

/**
 * Checks the tool names of a server's config lists against the tools it listed.
 *
 * @returns one English sentence per list with names that match no tool of the server (naming the
 *   list and the names), and one for `safe` names that `include` leaves out; empty when all match.
 */
function unknownToolNames(server: McpServerConfig, tools: readonly Pick<McpTool, "name">[]): string[] {
  const known = new Set(tools.map((t) => t.name));
  const warnings: string[] = [];
  const lists: [string, readonly string[] | undefined][] = [
    ["include", server.include],
    ["exclude", server.exclude],
    ["safe", server.safe],
    ["noAlwaysAllow", server.noAlwaysAllow],
    ["loaded", server.loaded],
  ];
  for (const [list, names] of lists) {
    const unknown = [...new Set(names ?? [])].filter((n) => !known.has(n));
    if (unknown.length > 0) {
      warnings.push(
        `MCP server ${server.name} has no tool ${unknown.map((n) => `"${n}"`).join(", ")} (named ` +
          `in its "${list}"; its tools: ${[...known].join(", ") || "none"})`,
      );
    }
  }
  if (server.include) {
    const left = [...new Set(server.safe)].filter((n) => known.has(n) && !server.include!.includes(n));
    if (left.length > 0)
      warnings.push(
        `MCP server ${server.name}: ${left.map((n) => `"${n}"`).join(", ")} in its "safe" is not in its "include", so it is not offered at all`,
      );
  }
  return warnings;
}

/**
 * Warns once per crowded chat kind (more than {@link MAX_TOOLS_PER_REQUEST} tools in front of the
 * model: deferred tools do not count, see `crowdedChats`), naming the MCP servers whose loaded
 * tools add to it and the `loaded` / `include` settings that narrow them. Call at start-up, after
 * the MCP servers are connected.
 *
 * @returns the warnings logged (English sentences), for tests and `npm run tools`.
 */
export function warnCrowdedContexts(toolbox: ToolBox, mcp: McpToolSource | undefined, log: Logger): string[] {
  const warnings = new Set<string>();
  for (const { offered } of crowdedChats(toolbox)) {
    const loaded = new Set(
      offered
        .list()
        .filter((t) => !t.deferred)
        .map((t) => t.name),
    );
    const count = offered.loadedCount();
    const servers = (mcp?.tools() ?? [])
      .map(({ server, tools }) => ({ server, loaded: tools.filter((t) => loaded.has(t.name)) }))
      .filter((s) => s.loaded.length > 0);
    const fromServers = servers.reduce((n, s) => n + s.loaded.length, 0);
    const fix =
      servers.length > 0
        ? `: ${count - fromServers} from tools/ and the server tools, and ` +
          `${servers.map((s) => `${s.loaded.length} from MCP server "${s.server}"`).join(", ")}. ` +
          `Name fewer tools in "loaded" in the MCP config (the others are found with tool search), ` +
          `keep only the tools you need with "include" (e.g. "include": ["` +
          `${servers[0]!.loaded[0]!.mcp.tool}"]), or give a server "tags" that chats do not offer`
        : `: ${countedTools(offered)}. ${CROWDED_ADVICE}`;
    warnings.add(
      `a chat would have ${count} tools in front of the model (more than ${MAX_TOOLS_PER_REQUEST}; models choose worse with more)${fix}`,
    );
  }
  for (const w of warnings) log.warn(w);
  return [...warnings];
}
