/**
 * What the approval prompt says about an MCP call: the server, the tool and each input field, so
 * the person sees what they approve. A field on one line is shown as it is (cut at
 * {@link PROMPT_LINE_MAX} characters); a value of several lines (a file to write, a message to
 * send) as a quoted block (`> ` before each line: Discord shows it as a quote, Telegram's prompt
 * turns it into a `blockquote`, the console prints it as it is), cut at {@link PROMPT_BLOCK_MAX}
 * characters or {@link PROMPT_BLOCK_MAX_LINES} lines. A cut value ends with `…(N more characters)`.
 * Controls and invisible characters are removed first, so a value cannot forge a line of the prompt
 * or turn its text around.
 */
import { englishNoun, localize, type Locale } from "../i18n.js";
import { cleanText, cutText } from "./result.js";

/** Longest value shown on one line, in characters (code points). */
export const PROMPT_LINE_MAX = 200;

/** Longest multi-line value shown as a quoted block, in characters (code points). */
export const PROMPT_BLOCK_MAX = 800;

/** Most lines of a quoted block. */
export const PROMPT_BLOCK_MAX_LINES = 15;

/**
 * Most characters of all fields together (code points): the fields after it are counted, not
 * shown, so the prompt fits Discord's 2000 and Telegram's 4096 characters with its other lines.
 */
export const PROMPT_FIELDS_MAX = 1400;

/**
 * The approval prompt's action for an MCP call, in `locale`: a head line naming tool and server,
 * then one `• field: value` line per input field (strings without quotes, other values as JSON),
 * or `• field:` followed by the quoted block of a multi-line value; `(no input)` when there is none.
 */
export function describeMcpCall(server: string, tool: string, args: Record<string, unknown>, locale: Locale): string {
  const head = localize(
    locale,
    { "zh-TW": "使用 MCP 伺服器「{server}」的工具 {tool}", en: "Use the {tool} tool of MCP server “{server}”" },
    { server, tool },
  );
  const entries = Object.entries(args);
  const fields: string[] = [];
  let used = 0;
  for (const [key, value] of entries) {
    const name = cutText(cleanText(key).replace(/\n/g, " "), 64);
    const text = cleanText((typeof value === "string" ? value : JSON.stringify(value)) ?? "");
    const field = text.includes("\n")
      ? `• ${name}:\n${quotedBlock(text)}`
      : `• ${name}: ${cutText(text, PROMPT_LINE_MAX)}`;
    used += [...field].length;
    if (used > PROMPT_FIELDS_MAX && fields.length > 0) break;
    fields.push(field);
  }
  if (fields.length < entries.length)
    fields.push(
      localize(
        locale,
        { "zh-TW": "…（還有 {count} 個欄位未顯示）", en: "…({count} more {fields} not shown)" },
        { count: entries.length - fields.length, fields: englishNoun(entries.length - fields.length, "field") },
      ),
    );
  const none = localize(locale, { "zh-TW": "（沒有參數）", en: "(no input)" });
  return `${head}\n${fields.length > 0 ? fields.join("\n") : none}`;
}

/** `text` as `> ` lines, at most {@link PROMPT_BLOCK_MAX} characters and {@link PROMPT_BLOCK_MAX_LINES} lines. */
function quotedBlock(text: string): string {
  const lines = text.split("\n");
  let shown = lines.slice(0, PROMPT_BLOCK_MAX_LINES).join("\n");
  const total = [...text].length;
  const kept = Math.min([...shown].length, PROMPT_BLOCK_MAX);
  shown = kept < total ? cutText(text, kept) : text;
  return shown
    .split("\n")
    .map((line) => (line === "" ? ">" : `> ${line}`))
    .join("\n");
}
