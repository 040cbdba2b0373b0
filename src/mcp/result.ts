/**
 * An MCP tool's result (`CallToolResult`) as the model's tool result and the person's share of it.
 *
 * - Content blocks keep their order: text blocks (and text resources) are joined by blank lines,
 *   and each image stands where the server put it (`ToolImage.at`), so "Here is the chart: [image]
 *   The chart shows…" reaches the model in that order.
 * - A block whose `annotations.audience` names the user but not the assistant is meant for the
 *   person: its text is shown with the answer (`ToolOutput.forUser`), never sent to the model; the
 *   model reads a one-line note that something was shown.
 * - `structuredContent` is sent (as JSON text) only when the content gives the model nothing: a
 *   server that returns structured content should also return it serialised as text (MCP
 *   2025-06-18, "Structured Content"), and sending both doubled every file a filesystem server read
 *   (and added the base64 of every image it returned).
 *
 * MCP tool results: https://modelcontextprotocol.io/specification/2025-06-18/server/tools#tool-result ;
 * annotations: https://modelcontextprotocol.io/specification/2025-06-18/server/resources#annotations .
 */
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { englishCount, englishNoun, localize, type Locale } from "../i18n.js";
import type { Logger } from "../log.js";
import { convertImage } from "../media/convert.js";
import { IMAGE_MAX_DOWNLOAD_BYTES } from "../media/limits.js";
import { INVISIBLE } from "../plain-text.js";
import type { ToolImage, ToolOutput } from "../toolbox/tool.js";
import { MCP_MAX_IMAGE_BYTES_PER_RESULT, MCP_MAX_IMAGES_PER_RESULT, MCP_MAX_USER_TEXT_CHARS } from "./limits.js";

/** Image types the Messages API accepts in an image block. */
const IMAGE_TYPES = new Set<ToolImage["mediaType"]>(["image/png", "image/jpeg", "image/gif", "image/webp"]);

/** Where a result comes from, for the notes, the log and the person's share. */
export interface ResultSource {
  server: string;
  tool: string;
  log: Logger;
  /** The language of the words the bot adds to the person's share. */
  locale: Locale;
}

type Block = NonNullable<CallToolResult["content"]>[number];

/** True when the block is meant for the person only: its audience names the user and not the assistant. */
export function forUserOnly(block: Block): boolean {
  const audience = (block as { annotations?: { audience?: unknown } }).annotations?.audience;
  return Array.isArray(audience) && audience.includes("user") && !audience.includes("assistant");
}

/**
 * Turns an MCP `CallToolResult` into the model's tool result (see the module comment): text and
 * images in order; images of the API's types converted like every image of the bot (upright, at
 * most 1568 px, re-encoded to fit), at most {@link MCP_MAX_IMAGES_PER_RESULT} and
 * {@link MCP_MAX_IMAGE_BYTES_PER_RESULT} base64 characters together (the rest, other image types
 * and unreadable images become a short note, with one warning naming server and tool); audio and
 * binary resources as a short note; resource links as `[resource: name <uri>]`. The toolbox then
 * redacts and cuts the text to 20 000 characters.
 */
export async function resultToOutput(result: CallToolResult, from: ResultSource): Promise<ToolOutput> {
  const texts: string[] = [];
  const images: ToolImage[] = [];
  const forUser: string[] = [];
  let userImages = 0;
  let imageChars = 0;
  let modelBlocks = 0;
  /** Images left out, counted by the reason the model reads. */
  const left = new Map<string, number>();
  const leaveOut = (reason: string) => left.set(reason, (left.get(reason) ?? 0) + 1);
  /** Where the next image stands: after the text so far (before the blank line that would join the next text). */
  const here = () => texts.join("\n\n").length;
  for (const block of result.content ?? []) {
    if (forUserOnly(block)) {
      if (block.type === "text") forUser.push(block.text);
      else if (block.type === "resource" && "text" in block.resource && typeof block.resource.text === "string")
        forUser.push(block.resource.text);
      else if (block.type === "image") userImages += 1;
      continue;
    }
    modelBlocks += 1;
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
          images.push({ ...image, at: here() });
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
    texts.push(`[${englishCount(count, "image")} left out: ${reason}]`);
    from.log.warn(
      { mcpServer: from.server, tool: from.tool, images: count, reason },
      `MCP server ${from.server}: ${englishCount(count, "image")} of a ${from.tool} result left out (${reason})`,
    );
  }
  if (modelBlocks === 0 && result.structuredContent !== undefined) {
    texts.push(JSON.stringify(result.structuredContent, null, 2));
  }
  const shown = userShare(forUser, userImages, from);
  if (shown) {
    texts.push(
      `[The ${from.tool} result also had content meant for the user only; it was shown to them directly (` +
        `${shown.length} characters), not to you.]`,
    );
  }
  let text = texts.join("\n\n");
  if (text.trim() === "" && images.length > 0) {
    text = `(the tool returned the ${englishNoun(images.length, "image")} below)`;
    for (const image of images) delete image.at;
  }
  return {
    text,
    ...(images.length > 0 ? { images } : {}),
    ...(shown ? { forUser: [shown] } : {}),
  };
}

/**
 * The person's share of a result, one text: `🔧 <server>: ` and the texts meant for them (cleaned
 * of controls and invisible characters, at most {@link MCP_MAX_USER_TEXT_CHARS} characters), and a
 * note for images meant for them (the bot cannot post a tool's images); undefined when there is none.
 */
function userShare(texts: string[], images: number, from: ResultSource): string | undefined {
  const parts = texts.map(cleanText).filter((t) => t !== "");
  if (images > 0)
    parts.push(
      localize(
        from.locale,
        {
          "zh-TW": "（工具傳回 {count} 張給你的圖片，這裡無法顯示）",
          en: "(the tool returned {count} {images} for you that cannot be shown here)",
        },
        { count: images, images: englishNoun(images, "image") },
      ),
    );
  if (parts.length === 0) return undefined;
  return `🔧 ${from.server}: ${cutText(parts.join("\n\n"), MCP_MAX_USER_TEXT_CHARS)}`;
}

/** Line feeds kept (CR LF and CR become LF, tabs a space); every other control and every invisible character removed. */
export function cleanText(text: string): string {
  return (
    text
      .replace(/\r\n?/g, "\n")
      .replace(/\t/g, " ")
      .replace(INVISIBLE, "")
      // eslint-disable-next-line no-control-regex -- removing control characters is the point
      .replace(/[\u0000-\u0009\u000B-\u001F\u007F-\u009F\u2028\u2029]/g, "")
      .trim()
  );
}

/**
 * `text` cut to `max` characters (code points, so never inside a surrogate pair), ending with
 * `…(N more characters)` when it was longer (N counts the characters left out); as it is otherwise.
 */
export function cutText(text: string, max: number): string {
  const chars = [...text];
  if (chars.length <= max) return text;
  return `${chars.slice(0, max).join("").trimEnd()}…(${chars.length - max} more characters)`;
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
