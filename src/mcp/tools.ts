/**
 * MCP tools as toolbox tools: name `<server>__<tool>` (made valid for the Messages API), the
 * server's description and JSON Schema (validated with Ajv, see `src/toolbox/json-input.ts`),
 * danger from the server's `readOnlyHint` or the config's `safe` list, and the call's result
 * turned into `tool_result` text and images.
 *
 * MCP tool results: https://modelcontextprotocol.io/specification/2025-06-18/server/tools#tool-result
 */
import { isDeepStrictEqual } from "node:util";
import { McpError, type CallToolResult, type Tool as McpTool } from "@modelcontextprotocol/sdk/types.js";
import { localize } from "../i18n.js";
import { JsonSchemaInput } from "../toolbox/json-input.js";
import { TOOL_NAME_PATTERN } from "../toolbox/registry.js";
import { ToolError, type Tool, type ToolImage, type ToolOutput } from "../toolbox/tool.js";
import type { McpServerConfig } from "./config.js";
import { McpCallInterruptedError, McpUnavailableError, type McpConnection } from "./connection.js";

/** Image types the Messages API accepts in an image block. */
const IMAGE_TYPES = new Set<ToolImage["mediaType"]>(["image/png", "image/jpeg", "image/gif", "image/webp"]);

/** Largest base64 image passed on, in characters (5 MB decoded is the API's limit per image). */
export const MAX_MCP_IMAGE_BASE64 = Math.floor((5 * 1024 * 1024 * 4) / 3);

/**
 * The toolbox name of an MCP tool: `<server>__<tool>`, every character outside `[a-zA-Z0-9_-]`
 * replaced by `_`, cut to 64 characters (the Messages API's rule `^[a-zA-Z0-9_-]{1,64}$`).
 */
export function mcpToolName(server: string, tool: string): string {
  const name = `${server}__${tool}`.replace(/[^a-zA-Z0-9_-]/g, "_").slice(0, 64);
  if (!TOOL_NAME_PATTERN.test(name)) throw new Error(`cannot make a tool name of ${JSON.stringify(`${server}__${tool}`)}`);
  return name;
}

/** Where an MCP tool comes from, as listings and errors say it. */
export function mcpSource(server: string): string {
  return `MCP server "${server}"`;
}

/** True when the server's tool runs without approval: marked read-only by the server, or listed in `safe`. */
function isSafeMcpTool(server: McpServerConfig, tool: McpTool): boolean {
  return tool.annotations?.readOnlyHint === true || server.safe.includes(tool.name);
}

/** Whether `include` / `exclude` of the server keep this tool. */
export function isWantedMcpTool(server: McpServerConfig, toolName: string): boolean {
  if (server.include && !server.include.includes(toolName)) return false;
  return !server.exclude.includes(toolName);
}

/** A toolbox tool that also says which MCP server and tool it calls. */
export interface McpBackedTool extends Tool {
  readonly mcp: { server: string; tool: string };
}

/**
 * Builds the toolbox tool of one MCP tool.
 *
 * - read-only (`annotations.readOnlyHint: true`): runs without approval, may run again on a retry;
 * - listed in `safe`: runs without approval, at most once per `tool_use` id (not read-only);
 * - otherwise dangerous: the requester approves first; the prompt names server, tool and input.
 *
 * @throws {Error} when the tool's input schema cannot be compiled (the caller skips the tool).
 */
export function toolFromMcp(server: McpServerConfig, tool: McpTool, connection: McpConnection): McpBackedTool {
  const input = new JsonSchemaInput(tool.inputSchema);
  const safe = isSafeMcpTool(server, tool);
  const readOnly = tool.annotations?.readOnlyHint === true;
  const title = tool.title ?? tool.annotations?.title;
  const description = (tool.description?.trim() || title || `The ${tool.name} tool of the ${server.name} MCP server.`).trim();
  return {
    name: mcpToolName(server.name, tool.name),
    description,
    input,
    tags: [...server.tags],
    dangerous: !safe,
    readOnly,
    timeoutMs: server.timeoutMs,
    alwaysAllow: !server.noAlwaysAllow.includes(tool.name),
    file: `<mcp:${server.name}>`,
    source: mcpSource(server.name),
    mcp: { server: server.name, tool: tool.name },
    run: async (args, context) => {
      let result: CallToolResult;
      try {
        result = await connection.callTool(tool.name, args, { signal: context.signal, timeoutMs: server.timeoutMs });
      } catch (error) {
        throw callFailure(server.name, tool.name, readOnly, error);
      }
      const output = resultToOutput(result);
      if (result.isError === true) throw new ToolError(output.text || `The ${tool.name} tool of MCP server "${server.name}" reported an error without a message.`);
      return output;
    },
    describe: (args, context) => describeMcpCall(server.name, tool.name, args, context.locale),
    activity: (_args, locale) => localize(locale, { "zh-TW": "{server}：{tool}", en: "{server}: {tool}" }, { server: server.name, tool: title ?? tool.name }),
  };
}

/** The ToolError the model reads when a call could not reach the server or was cut off. */
function callFailure(server: string, tool: string, readOnly: boolean, error: unknown): unknown {
  if (error instanceof McpUnavailableError) {
    return new ToolError(
      `The ${tool} tool is unavailable right now: ${error.message}. It was not run. Try again in a minute, or tell the user this tool is temporarily unavailable.`,
    );
  }
  if (error instanceof McpCallInterruptedError) {
    return new ToolError(
      readOnly
        ? `The connection to MCP server "${server}" dropped during the ${tool} call; the bot is reconnecting. Try again in a minute, or tell the user this tool is temporarily unavailable.`
        : `The connection to MCP server "${server}" dropped during the ${tool} call, so it is unknown whether it took effect. The bot is reconnecting. Do not repeat it blindly: check the current state first if you can, and tell the user.`,
    );
  }
  if (error instanceof McpError) return new ToolError(`MCP server "${server}" refused the ${tool} call: ${error.message}`);
  return error;
}

/**
 * Turns an MCP `CallToolResult` into the model's tool result: text blocks (and text resources)
 * joined by blank lines; images of the API's types as images (others, audio and binary resources
 * as a short note); resource links as `[resource: name <uri>]`; `structuredContent` as JSON text
 * unless a text block already holds the same JSON. The toolbox then redacts and cuts the text to
 * 20 000 characters.
 */
function resultToOutput(result: CallToolResult): ToolOutput {
  const texts: string[] = [];
  const images: ToolImage[] = [];
  for (const block of result.content ?? []) {
    switch (block.type) {
      case "text":
        texts.push(block.text);
        break;
      case "image": {
        const type = block.mimeType as ToolImage["mediaType"];
        if (IMAGE_TYPES.has(type) && block.data.length <= MAX_MCP_IMAGE_BASE64) images.push({ mediaType: type, data: block.data });
        else texts.push(`[an image (${block.mimeType}) the bot cannot pass on: ${IMAGE_TYPES.has(type) ? "over 5 MB" : "unsupported type"}]`);
        break;
      }
      case "audio":
        texts.push(`[audio (${block.mimeType}) left out: the model cannot hear audio]`);
        break;
      case "resource_link":
        texts.push(`[resource: ${block.name} <${block.uri}>]`);
        break;
      case "resource":
        if ("text" in block.resource && typeof block.resource.text === "string") texts.push(block.resource.text);
        else texts.push(`[binary resource left out: ${block.resource.uri}]`);
        break;
    }
  }
  if (result.structuredContent !== undefined && !texts.some((t) => sameJson(t, result.structuredContent))) {
    texts.push(JSON.stringify(result.structuredContent, null, 2));
  }
  const text = texts.join("\n\n").trim() || (images.length > 0 ? "(the tool returned the image(s) below)" : "");
  return images.length > 0 ? { text, images } : { text };
}

function sameJson(text: string, value: unknown): boolean {
  try {
    return isDeepStrictEqual(JSON.parse(text), value);
  } catch {
    return false;
  }
}

/** Longest value shown per field on an approval prompt, in characters. */
const PROMPT_VALUE_MAX = 200;

/**
 * The approval prompt's action for an MCP call: server, tool and each input field on its own
 * line (`• path: /tmp/a.txt`), strings without quotes, long values cut with `…`; in `locale`.
 */
function describeMcpCall(server: string, tool: string, args: Record<string, unknown>, locale: "zh-TW" | "en"): string {
  const head = localize(locale, { "zh-TW": "使用 MCP 伺服器「{server}」的工具 {tool}", en: "Use the {tool} tool of MCP server “{server}”" }, { server, tool });
  const fields = Object.entries(args).map(([key, value]) => {
    const text = typeof value === "string" ? value : JSON.stringify(value);
    const flat = (text ?? "").replace(/\s+/g, " ");
    return `• ${key}: ${flat.length > PROMPT_VALUE_MAX ? `${flat.slice(0, PROMPT_VALUE_MAX - 1)}…` : flat}`;
  });
  const none = localize(locale, { "zh-TW": "（沒有參數）", en: "(no input)" });
  return `${head}\n${fields.length > 0 ? fields.join("\n") : none}`;
}
