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
import { isDeepStrictEqual } from "node:util";
import { McpError, type CallToolResult, type Tool as McpTool } from "@modelcontextprotocol/sdk/types.js";
import { localize } from "../i18n.js";
import type { Logger } from "../log.js";
import { convertImage } from "../media/convert.js";
import { IMAGE_MAX_DOWNLOAD_BYTES } from "../media/limits.js";
import { JsonSchemaInput } from "../toolbox/json-input.js";
import { TOOL_NAME_PATTERN } from "../toolbox/registry.js";
import { ToolError, type Tool, type ToolImage, type ToolOutput } from "../toolbox/tool.js";
import type { McpServerConfig } from "./config.js";
import { McpCallInterruptedError, McpUnavailableError, type McpConnection } from "./connection.js";
import {
  MCP_MAX_DESCRIPTION_CHARS,
  MCP_MAX_IMAGE_BYTES_PER_RESULT,
  MCP_MAX_IMAGES_PER_RESULT,
  MCP_MAX_SCHEMA_BYTES,
} from "./limits.js";
import { modelInputSchema, UnusableSchemaError } from "./schema.js";

/** Image types the Messages API accepts in an image block. */
const IMAGE_TYPES = new Set<ToolImage["mediaType"]>(["image/png", "image/jpeg", "image/gif", "image/webp"]);

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
export function toolFromMcp(
  server: McpServerConfig,
  tool: McpTool,
  connection: McpConnection,
  options: McpToolOptions = {},
): McpBackedTool {
  const bytes = Buffer.byteLength(JSON.stringify(tool.inputSchema ?? null));
  if (bytes > MCP_MAX_SCHEMA_BYTES) {
    throw new UnusableSchemaError(
      `its input schema is ${Math.ceil(bytes / 1024)} KB, over the limit of ${MCP_MAX_SCHEMA_BYTES / 1024} KB`,
    );
  }
  const view = modelInputSchema(tool.inputSchema);
  let input: JsonSchemaInput;
  try {
    input = new JsonSchemaInput(tool.inputSchema, view);
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
    timeoutMs: server.timeoutMs,
    alwaysAllow: !server.noAlwaysAllow.includes(tool.name),
    deferred: !server.loaded.includes(tool.name),
    file: `<mcp:${server.name}>`,
    source: mcpSource(server.name),
    mcp: { server: server.name, tool: tool.name, why },
    run: async (args, context) => {
      let result: CallToolResult;
      try {
        result = await connection.callTool(tool.name, args, { signal: context.signal, timeoutMs: server.timeoutMs });
      } catch (error) {
        throw callFailure(server.name, tool.name, readOnly, error);
      }
      const output = await resultToOutput(result, { server: server.name, tool: tool.name, log: context.log });
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

/** The ToolError the model reads when a call could not reach the server or was cut off. */
function callFailure(server: string, tool: string, readOnly: boolean, error: unknown): unknown {
  if (error instanceof McpUnavailableError) {
    return new ToolError(
      `The ${tool} tool is unavailable right now: ${error.message}. It was not run. Try again in ` +
        `a minute, or tell the user this tool is temporarily unavailable.`,
    );
  }
  if (error instanceof McpCallInterruptedError) {
    return new ToolError(
      readOnly
        ? `The connection to MCP server "${server}" dropped during the ${tool} call; the bot is ` +
            `reconnecting. Try again in a minute, or tell the user this tool is temporarily ` +
            `unavailable.`
        : `The connection to MCP server "${server}" dropped during the ${tool} call, so it is ` +
            `unknown whether it took effect. The bot is reconnecting. Do not repeat it blindly: check ` +
            `the current state first if you can, and tell the user.`,
    );
  }
  if (error instanceof McpError)
    return new ToolError(`MCP server "${server}" refused the ${tool} call: ${error.message}`);
  return error;
}

/**
 * Turns an MCP `CallToolResult` into the model's tool result: text blocks (and text resources)
 * joined by blank lines; images of the API's types as images, converted like every image of the
 * bot (upright, at most 1568 px, re-encoded to fit), at most {@link MCP_MAX_IMAGES_PER_RESULT}
 * and {@link MCP_MAX_IMAGE_BYTES_PER_RESULT} base64 characters together (the rest, other image
 * types and unreadable images become a short note, with one warning naming server and tool);
 * audio and binary resources as a short note; resource links as `[resource: name <uri>]`;
 * `structuredContent` as JSON text unless a text block already holds the same JSON. The toolbox
 * then redacts and cuts the text to 20 000 characters.
 */
async function resultToOutput(
  result: CallToolResult,
  from: { server: string; tool: string; log: Logger },
): Promise<ToolOutput> {
  const texts: string[] = [];
  const images: ToolImage[] = [];
  let imageChars = 0;
  /** Images left out, counted by the reason the model reads. */
  const left = new Map<string, number>();
  const leaveOut = (reason: string) => left.set(reason, (left.get(reason) ?? 0) + 1);
  for (const block of result.content ?? []) {
    switch (block.type) {
      case "text":
        texts.push(block.text);
        break;
      case "image": {
        const type = block.mimeType as ToolImage["mediaType"];
        if (!IMAGE_TYPES.has(type)) {
          texts.push(`[an image (${block.mimeType}) the bot cannot pass on: unsupported type]`);
          break;
        }
        if (images.length >= MCP_MAX_IMAGES_PER_RESULT) {
          leaveOut(`at most ${MCP_MAX_IMAGES_PER_RESULT} images of one result are passed on`);
          break;
        }
        const image = await convertResultImage(block.data);
        if (typeof image === "string") leaveOut(`the bot cannot read it (${image})`);
        else if (imageChars + image.data.length > MCP_MAX_IMAGE_BYTES_PER_RESULT)
          leaveOut(`the images of one result may have ${MCP_MAX_IMAGE_BYTES_PER_RESULT / (1024 * 1024)} MB together`);
        else {
          imageChars += image.data.length;
          images.push(image);
        }
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
  for (const [reason, count] of left) {
    texts.push(`[${count} image${count === 1 ? "" : "s"} left out: ${reason}]`);
    from.log.warn(
      { mcpServer: from.server, tool: from.tool, images: count, reason },
      `MCP server ${from.server}: ${count} image(s) of a ${from.tool} result left out (${reason})`,
    );
  }
  if (result.structuredContent !== undefined && !texts.some((t) => sameJson(t, result.structuredContent))) {
    texts.push(JSON.stringify(result.structuredContent, null, 2));
  }
  const text = texts.join("\n\n").trim() || (images.length > 0 ? "(the tool returned the image(s) below)" : "");
  return images.length > 0 ? { text, images } : { text };
}

/** One result image converted for the model, or why it cannot be passed on. */
async function convertResultImage(data: string): Promise<ToolImage | string> {
  // base64 of n bytes has about 4n/3 characters: refuse before decoding what would be too big to convert.
  if (data.length > Math.ceil((IMAGE_MAX_DOWNLOAD_BYTES * 4) / 3))
    return `over ${IMAGE_MAX_DOWNLOAD_BYTES / (1024 * 1024)} MB`;
  try {
    const { block } = await convertImage(Buffer.from(data, "base64"), { name: "tool image" });
    if (block.source.type !== "base64") return "unreadable";
    return { mediaType: block.source.media_type, data: block.source.data };
  } catch (error) {
    return (error as Error).message;
  }
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
  const head = localize(
    locale,
    { "zh-TW": "使用 MCP 伺服器「{server}」的工具 {tool}", en: "Use the {tool} tool of MCP server “{server}”" },
    { server, tool },
  );
  const fields = Object.entries(args).map(([key, value]) => {
    const text = typeof value === "string" ? value : JSON.stringify(value);
    const flat = (text ?? "").replace(/\s+/g, " ");
    return `• ${key}: ${flat.length > PROMPT_VALUE_MAX ? `${flat.slice(0, PROMPT_VALUE_MAX - 1)}…` : flat}`;
  });
  const none = localize(locale, { "zh-TW": "（沒有參數）", en: "(no input)" });
  return `${head}\n${fields.length > 0 ? fields.join("\n") : none}`;
}
