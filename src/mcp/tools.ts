/**
 * MCP tools as toolbox tools: name `<server>__<tool>` (made valid for the Messages API), the
 * server's description (cut to {@link MCP_MAX_DESCRIPTION_CHARS}) and JSON Schema (in a form the
 * API accepts, see `schema.ts`; the server's own schema validates the input with Ajv, see
 * `src/toolbox/json-input.ts`), danger decided by the operator (the config's `safe` list, or the
 * server's annotations when the config says `trustAnnotations`), and the call's result turned
 * into `tool_result` text and images (bounded, see `limits.ts`).
 *
 * MCP tools: https://modelcontextprotocol.io/specification/2025-06-18/server/tools
 */
import { createHash } from "node:crypto";
import { ErrorCode, McpError, type CallToolResult, type Tool as McpTool } from "@modelcontextprotocol/sdk/types.js";
import { localize } from "../i18n.js";
import { redact } from "../log.js";
import { plainLine } from "../plain-text.js";
import { JsonSchemaInput } from "../toolbox/json-input.js";
import { TOOL_NAME_PATTERN } from "../toolbox/registry.js";
import { ToolError, type Tool } from "../toolbox/tool.js";
import { timedOutText, unknownEffectText } from "../toolbox/toolbox.js";
import type { McpServerConfig } from "./config.js";
import { McpCallInterruptedError, McpUnavailableError, type McpConnection } from "./connection.js";
import { MCP_MAX_DESCRIPTION_CHARS, MCP_MAX_SCHEMA_BYTES } from "./limits.js";
import { describeMcpCall } from "./prompt.js";
import { resultToOutput } from "./result.js";
import { modelInputSchema, UnusableSchemaError } from "./schema.js";

/** Hex digits of the hash that ends a name cut to 64 characters. */
const NAME_HASH_DIGITS = 8;

/**
 * The toolbox name of an MCP tool: `<server>__<tool>`, every character outside `[a-zA-Z0-9_-]`
 * replaced by `_` (the Messages API's rule `^[a-zA-Z0-9_-]{1,64}$`). A name longer than 64
 * characters is cut to 55 and ends with `_` and 8 hex digits of the SHA-256 of the full
 * `<server>__<tool>`, so two long names that share their first 64 characters stay apart, and a
 * name stays the same from one start to the next.
 */
export function mcpToolName(server: string, tool: string): string {
  const full = `${server}__${tool}`;
  const clean = full.replace(/[^a-zA-Z0-9_-]/g, "_");
  const name =
    clean.length <= 64
      ? clean
      : `${clean.slice(0, 64 - NAME_HASH_DIGITS - 1)}_${createHash("sha256").update(full).digest("hex").slice(0, NAME_HASH_DIGITS)}`;
  if (!TOOL_NAME_PATTERN.test(name)) throw new Error(`cannot make a tool name of ${JSON.stringify(full)}`);
  return name;
}

/** Where an MCP tool comes from, as listings and errors say it. */
export function mcpSource(server: string): string {
  return `MCP server "${server}"`;
}

/** Whether `include` / `exclude` of the server keep this tool. */
export function isWantedMcpTool(server: McpServerConfig, toolName: string): boolean {
  if (server.include && !server.include.includes(toolName)) return false;
  return !server.exclude.includes(toolName);
}

/**
 * What a call of an MCP tool needs, as the operator decided it (annotations are claims of the
 * server, https://modelcontextprotocol.io/specification/2025-06-18/server/tools#tool says
 * clients must consider them untrusted unless the server is trusted):
 *
 * - listed in the server's `safe`: no approval; read-only (may run again on a retry) only when
 *   `trustAnnotations` is on and the server marks it read-only;
 * - `trustAnnotations: true` and `readOnlyHint: true` without `destructiveHint: true`: no
 *   approval, read-only;
 * - otherwise dangerous (the requester approves) and at most once per `tool_use` id. A tool that
 *   says both `readOnlyHint: true` and `destructiveHint: true` is never read-only.
 */
export function mcpToolNeeds(server: McpServerConfig, tool: Pick<McpTool, "name" | "annotations">): McpToolNeeds {
  const hints = tool.annotations;
  const claimsReadOnly = hints?.readOnlyHint === true && hints.destructiveHint !== true;
  const readOnly = server.trustAnnotations && claimsReadOnly;
  if (server.safe.includes(tool.name)) return { dangerous: false, readOnly, why: 'listed in "safe"' };
  if (readOnly) return { dangerous: false, readOnly, why: 'marked read-only by the server ("trustAnnotations")' };
  const why =
    hints?.readOnlyHint === true && hints.destructiveHint === true
      ? "the server marks it both read-only and destructive"
      : hints?.readOnlyHint === true
        ? 'the server marks it read-only, but its annotations are not trusted (no "trustAnnotations")'
        : 'not listed in "safe"';
  return { dangerous: true, readOnly: false, why };
}

/** What a call of an MCP tool needs: approval, whether it may run again on a retry, and why (English, for listings). */
export interface McpToolNeeds {
  dangerous: boolean;
  readOnly: boolean;
  why: string;
}

/** A toolbox tool that also says which MCP server and tool it calls. */
export interface McpBackedTool extends Tool {
  /** The server, the tool's MCP name, and why it asks for approval or not (English, for `npm run tools`). */
  readonly mcp: { server: string; tool: string; why: string };
}

/** Options of {@link toolFromMcp}. */
export interface McpToolOptions {
  /** What the call needs; default as {@link mcpToolNeeds} says. */
  needs?: McpToolNeeds;
}

/**
 * Builds the toolbox tool of one MCP tool: approval as {@link mcpToolNeeds} decides, the prompt
 * naming server, tool and input; the input schema in the form the API accepts; the description
 * cut to {@link MCP_MAX_DESCRIPTION_CHARS}.
 *
 * @throws {UnusableSchemaError} (the caller skips the tool, with the message as the reason) when
 *   the input schema is larger than {@link MCP_MAX_SCHEMA_BYTES}, cannot be made acceptable to the
 *   Messages API, or cannot be compiled.
 */
export async function toolFromMcp(
  server: McpServerConfig,
  tool: McpTool,
  connection: McpConnection,
  options: McpToolOptions = {},
): Promise<McpBackedTool> {
  const bytes = Buffer.byteLength(JSON.stringify(tool.inputSchema ?? null));
  if (bytes > MCP_MAX_SCHEMA_BYTES) {
    throw new UnusableSchemaError(
      `its input schema is ${Math.ceil(bytes / 1024)} KB, over the limit of ${MCP_MAX_SCHEMA_BYTES / 1024} KB`,
    );
  }
  const view = modelInputSchema(tool.inputSchema);
  let input: JsonSchemaInput;
  try {
    input = await JsonSchemaInput.compile(tool.inputSchema, view);
  } catch (error) {
    throw new UnusableSchemaError(`its input schema cannot be compiled: ${(error as Error).message}`);
  }
  const { dangerous, readOnly, why } = options.needs ?? mcpToolNeeds(server, tool);
  const title = tool.title ?? tool.annotations?.title;
  const description = cutDescription(
    (tool.description?.trim() || title || `The ${tool.name} tool of the ${server.name} MCP server.`).trim(),
  );
  return {
    name: mcpToolName(server.name, tool.name),
    description,
    input,
    tags: [...server.tags],
    dangerous,
    readOnly,
    outside: true,
    timeoutMs: server.timeoutMs,
    alwaysAllow: !server.noAlwaysAllow.includes(tool.name),
    deferred: !server.loaded.includes(tool.name),
    file: `<mcp:${server.name}>`,
    source: mcpSource(server.name),
    mcp: { server: server.name, tool: tool.name, why },
    run: async (args, context) => {
      let result: CallToolResult;
      try {
        const { onProgress } = context;
        result = await connection.callTool(tool.name, args, {
          signal: context.signal,
          timeoutMs: server.timeoutMs,
          // The server's words, cleaned: one short plain line on the status line.
          ...(onProgress
            ? {
                onProgress: ({ progress, total, message }) =>
                  onProgress({
                    progress,
                    ...(total !== undefined ? { total } : {}),
                    ...(message ? { message: plainLine(redact(message), 60) } : {}),
                  }),
              }
            : {}),
        });
      } catch (error) {
        throw callFailure(server, tool.name, readOnly, error);
      }
      const output = await resultToOutput(result, {
        server: server.name,
        tool: tool.name,
        log: context.log,
        locale: context.locale,
      });
      if (result.isError === true)
        throw new ToolError(
          output.text || `The ${tool.name} tool of MCP server "${server.name}" reported an error without a message.`,
        );
      return output;
    },
    describe: (args, context) => describeMcpCall(server.name, tool.name, args, context.locale),
    activity: (_args, locale) =>
      localize(
        locale,
        { "zh-TW": "{server}：{tool}", en: "{server}: {tool}" },
        { server: server.name, tool: title ?? tool.name },
      ),
  };
}

/** `text` cut to {@link MCP_MAX_DESCRIPTION_CHARS} (ending with `…`), never inside a surrogate pair. */
function cutDescription(text: string): string {
  if (text.length <= MCP_MAX_DESCRIPTION_CHARS) return text;
  let cut = MCP_MAX_DESCRIPTION_CHARS - 1;
  const code = text.charCodeAt(cut - 1);
  if (code >= 0xd800 && code <= 0xdbff) cut -= 1;
  return `${text.slice(0, cut)}…`;
}

/** The ToolError the model reads when a call could not reach the server, was cut off, or did not answer in time. */
function callFailure(server: McpServerConfig, tool: string, readOnly: boolean, error: unknown): unknown {
  if (error instanceof McpUnavailableError) {
    return new ToolError(
      `The ${tool} tool is unavailable right now: ${error.message}. It was not run. Try again in ` +
        `a minute, or tell the user this tool is temporarily unavailable.`,
    );
  }
  if (error instanceof McpCallInterruptedError) {
    const dropped = `The connection to MCP server "${server.name}" dropped during the ${tool} call`;
    return new ToolError(
      readOnly
        ? `${dropped}; the bot is reconnecting. Try again in a minute, or tell the user this tool is temporarily ` +
            `unavailable.`
        : `${unknownEffectText(dropped)} The bot is reconnecting.`,
    );
  }
  if (error instanceof McpError && error.code === ErrorCode.RequestTimeout)
    return new ToolError(timedOutText(`The ${tool} call of MCP server "${server.name}"`, server.timeoutMs, readOnly));
  if (error instanceof McpError)
    return new ToolError(`MCP server "${server.name}" refused the ${tool} call: ${error.message}`);
  return error;
}
