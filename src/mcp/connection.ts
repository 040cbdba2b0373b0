/**
 * One MCP server connection with the official SDK client (`@modelcontextprotocol/sdk`): connect,
 * list the tools (every page), call a tool, follow `notifications/tools/list_changed`, and
 * re-establish a dropped connection with backoff. Stdio servers are child processes, stopped by
 * {@link McpConnection.close}. MCP spec: https://modelcontextprotocol.io/specification/2025-06-18 .
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { Transport } from "@modelcontextprotocol/sdk/shared/transport.js";
import type { JsonSchemaValidator, jsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/types.js";
import {
  ErrorCode,
  McpError,
  ToolListChangedNotificationSchema,
  type CallToolResult,
  type Progress,
  type Tool as McpTool,
} from "@modelcontextprotocol/sdk/types.js";
import { existsSync, statSync } from "node:fs";
import { silentLogger, valueRedactor, type Logger } from "../log.js";
import type { McpServerConfig } from "./config.js";

/** Longest wait for a server to start and answer `initialize` and `tools/list`, in ms. */
export const MCP_CONNECT_TIMEOUT_MS = 30_000;

/**
 * Least time between two tool listings of one server after `notifications/tools/list_changed`, in
 * ms: a server that sends the notification in a loop gets one `tools/list` (and one round of schema
 * compiling) per this interval, the last change included.
 */
export const MCP_LIST_CHANGED_INTERVAL_MS = 10_000;

/**
 * How long a dropped connection waits before it is reported as lost and reconnected, in ms. A
 * Ctrl-C in a terminal reaches a stdio server too (it is in the bot's process group), so its
 * connection may drop a moment before the bot starts stopping; a stop begun within this time
 * ({@link McpConnection.stopping}, {@link McpConnection.close}) makes the drop part of the stop:
 * no warning, no reconnection.
 */
export const MCP_DROP_GRACE_MS = 300;

/** Backoff of reconnection attempts, in ms: first delay and largest delay (doubling in between). */
export const MCP_RECONNECT_DELAYS_MS = { first: 1000, max: 30_000 } as const;

/** Our client's name and version in `initialize`. */
const CLIENT_INFO = { name: "taiwan-tool-bot", version: "0.1.0" };

/**
 * The client capabilities the bot declares in `initialize`: none, because it has none of them —
 * - `sampling` (the server asks the client's model for a completion): not offered; a server's
 *   request would spend the chat's budget outside any conversation;
 * - `elicitation` (the server asks the person a question mid-call): not offered; the bot's only
 *   question to a person is the approval prompt;
 * - `roots` (folders the server may work in): the operator gives a server its folders in its
 *   command line;
 * - `tasks` (long calls run as MCP tasks): tools that need them are left out at listing.
 * Servers adapt to it: server-everything, for one, then offers none of its sampling, elicitation
 * or roots tools. Spec: https://modelcontextprotocol.io/specification/2025-06-18/basic/lifecycle#capability-negotiation .
 */
export const MCP_CLIENT_CAPABILITIES = {} as const;

/**
 * The SDK client's checker of tools' output schemas, which checks nothing: the SDK's default
 * compiles every tool's `outputSchema` with Ajv on the event loop at each listing (a large schema
 * held it for hundreds of ms) and matches its patterns with backtracking regular expressions. The
 * bot never relies on the shape of `structuredContent`: it passes it on as JSON text, and only when
 * the result has no other content (`result.ts`).
 */
const OUTPUT_SCHEMAS_UNCHECKED: jsonSchemaValidator = {
  getValidator<T>(): JsonSchemaValidator<T> {
    return (input) => ({ valid: true, data: input as T, errorMessage: undefined });
  },
};

/** The connection is down (not yet up, dropped and reconnecting, or closed): nothing was sent. */
export class McpUnavailableError extends Error {
  constructor(
    readonly server: string,
    readonly reason: string,
  ) {
    super(`MCP server "${server}" is not connected (${reason})`);
    this.name = "McpUnavailableError";
  }
}

/** The connection dropped while a call was in flight: whether it took effect is unknown. */
export class McpCallInterruptedError extends Error {
  constructor(
    readonly server: string,
    cause: unknown,
  ) {
    super(`the connection to MCP server "${server}" dropped during the call`, { cause });
    this.name = "McpCallInterruptedError";
  }
}

/** Options of {@link McpConnection}. */
export interface McpConnectionOptions {
  log?: Logger;
  /**
   * Called with the server's full tool list after every (re)connection and `list_changed`, one
   * list at a time (a later list waits for the earlier one's promise); the connection counts as
   * up once the first list is handled.
   */
  onTools: (tools: McpTool[]) => void | Promise<void>;
  /** Reconnection backoff; default {@link MCP_RECONNECT_DELAYS_MS}. */
  reconnectDelaysMs?: { first: number; max: number };
  /** Connect + list timeout, in ms; default {@link MCP_CONNECT_TIMEOUT_MS}. */
  connectTimeoutMs?: number;
  /** Least time between two listings after `list_changed`, in ms; default {@link MCP_LIST_CHANGED_INTERVAL_MS}. */
  listChangedIntervalMs?: number;
}

/** The state of a connection. */
export type McpConnectionState = "connecting" | "connected" | "reconnecting" | "closed";

/** One server's connection. */
export class McpConnection {
  /** The server's entry from `MCP_CONFIG`, `${VAR}` values already filled in. */
  readonly config: McpServerConfig;
  #state: McpConnectionState = "connecting";
  #client: Client | undefined;
  #transport: Transport | undefined;
  #stderrTail: string[] = [];
  #retryTimer: NodeJS.Timeout | undefined;
  /** Set by {@link stopping}: the bot is stopping, a drop is expected and not reconnected. */
  #stopping = false;
  #attempt = 0;
  #lastError = "";
  /** The tool lists handed to `onTools`, one after the other. */
  #toolsHandled: Promise<void> = Promise.resolve();
  /** When the last tool listing started (ms since the epoch), and the listing waiting for its turn after a `list_changed`. */
  #listedAt = 0;
  #refreshTimer: NodeJS.Timeout | undefined;
  readonly #log: Logger;
  readonly #options: McpConnectionOptions;
  /** Redacts this server's secrets (`config.secrets`) from its stderr and errors; their forms are worked out once. */
  readonly #redact: (text: string) => string;

  constructor(config: McpServerConfig, options: McpConnectionOptions) {
    this.config = config;
    this.#redact = valueRedactor(config.secrets);
    this.#options = options;
    this.#log = (options.log ?? silentLogger).child({ mcpServer: config.name });
  }

  /** Where the connection is. */
  get state(): McpConnectionState {
    return this.#state;
  }

  /**
   * Connects and lists the tools (reported through `onTools`). Used at start-up: a failure is
   * thrown, and the caller skips the server; reconnections after a drop retry by themselves.
   *
   * @throws {Error} with a one-line reason (redacted) when the server cannot be started, does not
   *   answer `initialize` within the timeout, or fails `tools/list`.
   */
  async start(): Promise<void> {
    try {
      await this.#open();
    } catch (error) {
      this.#state = "closed";
      throw new Error(this.#reason(error), { cause: error });
    }
  }

  /**
   * Calls a tool (`tools/call`).
   *
   * @param name - the tool's MCP name.
   * @param args - the validated input.
   * @param options.signal - aborts the request (the SDK sends `notifications/cancelled`).
   * @param options.timeoutMs - request timeout, in ms.
   * @param options.onProgress - called with each `notifications/progress` the server sends for this
   *   call; when given, the request carries a progress token (`_meta.progressToken`), which asks the
   *   server for them (https://modelcontextprotocol.io/specification/2025-06-18/basic/utilities/progress).
   * @throws {McpUnavailableError} when not connected (nothing was sent);
   *   {@link McpCallInterruptedError} when the connection dropped during the call (reconnection
   *   starts); `McpError` for an error answer of the server (e.g. invalid params).
   */
  async callTool(
    name: string,
    args: Record<string, unknown>,
    options: { signal: AbortSignal; timeoutMs: number; onProgress?: (progress: Progress) => void },
  ): Promise<CallToolResult> {
    const client = this.#client;
    if (this.#state !== "connected" || !client) {
      throw new McpUnavailableError(
        this.config.name,
        this.#state === "closed"
          ? "the bot is stopping"
          : `reconnecting${this.#lastError ? ` after: ${this.#lastError}` : ""}`,
      );
    }
    try {
      return (await client.callTool({ name, arguments: args }, undefined, {
        signal: options.signal,
        timeout: options.timeoutMs,
        ...(options.onProgress ? { onprogress: options.onProgress } : {}),
      })) as CallToolResult;
    } catch (error) {
      if (options.signal.aborted) throw error;
      // An error answer of the server (invalid params, unknown tool) or our own request timeout: the connection is fine.
      if (error instanceof McpError && error.code !== ErrorCode.ConnectionClosed) throw error;
      // The transport failed (child exited, HTTP unreachable): start over.
      this.#dropped(error);
      throw new McpCallInterruptedError(this.config.name, error);
    }
  }

  /**
   * Says that the bot is stopping (call it as the stop begins, before the worker drains): from now
   * on, a dropped connection (a stdio server that got the terminal's Ctrl-C too) is logged at
   * debug level, not reported as lost, and not reconnected; a reconnection under way is not
   * retried. Calls still work while the connection is up. {@link close} closes it. Never throws.
   */
  stopping(): void {
    this.#stopping = true;
    if (this.#state === "reconnecting") {
      clearTimeout(this.#retryTimer);
      this.#state = "closed";
    }
  }

  /** Closes the connection for good (deliberately: not reported as lost, not reconnected); a stdio server's child process is stopped. Never throws. */
  async close(): Promise<void> {
    this.#state = "closed";
    clearTimeout(this.#retryTimer);
    clearTimeout(this.#refreshTimer);
    this.#refreshTimer = undefined;
    await this.#shutdown();
  }

  async #open(): Promise<void> {
    const client = new Client(CLIENT_INFO, {
      capabilities: MCP_CLIENT_CAPABILITIES,
      jsonSchemaValidator: OUTPUT_SCHEMAS_UNCHECKED,
    });
    const transport = this.#makeTransport();
    this.#client = client;
    this.#transport = transport;
    client.onclose = () => {
      if (this.#client === client) this.#dropped(new Error(this.#exitText("the connection closed")));
    };
    client.onerror = (error) => this.#log.debug({ err: error }, "MCP transport error");
    client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
      if (this.#client === client) this.#refreshSoon(client);
    });
    const timeoutMs = this.#options.connectTimeoutMs ?? MCP_CONNECT_TIMEOUT_MS;
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(new Error(`no answer within ${timeoutMs / 1000} s`)), timeoutMs);
    });
    try {
      await Promise.race([client.connect(transport, { timeout: timeoutMs }), timeout]);
      const tools = await Promise.race([this.#listTools(client), timeout]);
      if (this.#state === "closed") throw new Error("closed while connecting");
      this.#state = "connected";
      this.#attempt = 0;
      this.#lastError = "";
      await this.#handleTools(tools);
    } catch (error) {
      await this.#shutdown();
      throw error;
    } finally {
      clearTimeout(timer);
    }
  }

  /**
   * After a `list_changed`: lists the tools again now, or — when the last listing started less than
   * the interval ago — once when the interval is over (the notifications meanwhile are folded into
   * that one listing, which sees the server's latest list).
   */
  #refreshSoon(client: Client): void {
    if (this.#refreshTimer) return;
    const interval = this.#options.listChangedIntervalMs ?? MCP_LIST_CHANGED_INTERVAL_MS;
    const wait = Math.max(0, this.#listedAt + interval - Date.now());
    this.#refreshTimer = setTimeout(() => {
      this.#refreshTimer = undefined;
      if (this.#client !== client) return;
      this.#log.info(`MCP server ${this.config.name}: tool list changed; refreshing`);
      this.#listTools(client).then(
        (tools) => this.#handleTools(tools),
        (error: unknown) =>
          this.#log.warn(
            { reason: this.#reason(error) },
            `MCP server ${this.config.name}: refreshing its tools failed`,
          ),
      );
    }, wait);
    this.#refreshTimer.unref();
  }

  /** Hands `tools` to `onTools` after the lists before it; never rejects (a failure is logged). */
  #handleTools(tools: McpTool[]): Promise<void> {
    const handled = this.#toolsHandled
      .then(() => this.#options.onTools(tools))
      .catch((error: unknown) => {
        this.#log.error({ err: error }, `MCP server ${this.config.name}: registering its tools failed`);
      });
    this.#toolsHandled = handled;
    return handled;
  }

  #makeTransport(): Transport {
    const config = this.config;
    if (config.transport === "http") {
      return new StreamableHTTPClientTransport(config.url, { requestInit: { headers: config.headers } });
    }
    this.#stderrTail = [];
    if (config.cwd !== undefined && !(existsSync(config.cwd) && statSync(config.cwd).isDirectory())) {
      throw new Error(`cwd ${config.cwd} does not exist (or is not a folder)`);
    }
    // The SDK gives the child only a safe default environment (HOME, PATH, …; never our secrets) plus `env`.
    const transport = new StdioClientTransport({
      command: config.command,
      args: config.args,
      env: config.env,
      cwd: config.cwd,
      stderr: "pipe",
    });
    transport.stderr?.on("data", (chunk: Buffer) => {
      for (const line of chunk.toString("utf8").split("\n")) {
        if (line.trim() === "") continue;
        // Redacted line by line, before any joining: a multi-line secret (a PEM key) matches per line.
        const clean = this.#redact(line.trim());
        this.#stderrTail.push(clean);
        if (this.#stderrTail.length > 5) this.#stderrTail.shift();
        this.#log.debug({ content: { line: clean } }, "MCP server stderr"); // may echo tool inputs and results
      }
    });
    return transport;
  }

  async #listTools(client: Client): Promise<McpTool[]> {
    this.#listedAt = Date.now();
    const tools: McpTool[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < 100; page += 1) {
      const result = await client.listTools(cursor ? { cursor } : undefined);
      tools.push(...result.tools);
      cursor = result.nextCursor;
      if (!cursor) break;
    }
    return tools;
  }

  /**
   * The connection is gone: forget the client and, unless the bot stops within
   * {@link MCP_DROP_GRACE_MS} (or has begun to: {@link stopping}), report it as lost and try again
   * after the backoff. Only a connection that was up counts: a failed start is reported by
   * `start()`, a failed retry retries.
   */
  #dropped(error: unknown): void {
    if (this.#state !== "connected") return;
    this.#lastError = this.#reason(error);
    this.#state = "reconnecting";
    const quiet = () => {
      this.#state = "closed";
      this.#log.debug({ reason: this.#lastError }, `MCP server ${this.config.name}: connection closed while stopping`);
    };
    if (this.#stopping) {
      quiet();
      void this.#shutdown();
      return;
    }
    void this.#shutdown().finally(() => {
      if (this.#state === "closed") return; // closed meanwhile
      this.#retryTimer = setTimeout(() => {
        if (this.#state === "closed") return;
        if (this.#stopping) return quiet();
        this.#log.warn(
          { reason: this.#lastError },
          `MCP server ${this.config.name}: connection lost (${this.#lastError}); reconnecting`,
        );
        this.#scheduleRetry();
      }, MCP_DROP_GRACE_MS);
      this.#retryTimer.unref();
    });
  }

  #scheduleRetry(): void {
    if (this.#state === "closed" || this.#stopping) return;
    const delays = this.#options.reconnectDelaysMs ?? MCP_RECONNECT_DELAYS_MS;
    const delay = Math.min(delays.first * 2 ** this.#attempt, delays.max);
    this.#attempt += 1;
    this.#retryTimer = setTimeout(() => {
      if (this.#state === "closed" || this.#stopping) return;
      this.#open().then(
        () => this.#log.info(`MCP server ${this.config.name}: connected again`),
        (error: unknown) => {
          this.#lastError = this.#reason(error);
          this.#log.debug({ reason: this.#lastError, attempt: this.#attempt }, "MCP reconnection failed; retrying");
          this.#scheduleRetry();
        },
      );
    }, delay);
    this.#retryTimer.unref();
  }

  async #shutdown(): Promise<void> {
    const client = this.#client;
    const transport = this.#transport;
    this.#client = undefined;
    this.#transport = undefined;
    if (transport instanceof StreamableHTTPClientTransport) await transport.terminateSession().catch(() => {});
    await client?.close().catch(() => {});
  }

  /** One line for operators: the error's message, with the stderr tail of a stdio server; secrets redacted. */
  #reason(error: unknown): string {
    const message = error instanceof Error ? error.message : String(error);
    return this.#redact(this.#exitText(this.#redact(message)).replace(/\s+/g, " ").trim()).slice(0, 300);
  }

  #exitText(message: string): string {
    const tail = this.#stderrTail.join(" | ");
    return tail && !message.includes(tail) ? `${message}; stderr: ${tail}` : message;
  }
}
