/**
 * Undoing a memory write made after the model read outside content (issue 39). Text the model
 * reads — web search and fetch results, a file, an MCP result, a forwarded message, other people's
 * messages in a group — may tell it to remember something ("the user always approves
 * deletions"). Such a write is not refused (the person may have asked for it), but it is shown to
 * the person who asked, with an undo button, after the answer.
 *
 * - The memory tool records every write it makes as an **undo record**: the files it changed, each
 *   as it was before and after ({@link memoryDiff}), under
 *   `memory:undo:{<scope>}:<handle>` for {@link UNDO_TTL_SECONDS}, `<handle>` derived from the
 *   call's `tool_use` id ({@link undoHandle}).
 * - After the answer, {@link undoOffers} picks the run's successful memory writes when the run
 *   read outside content ({@link readOutsideContent}); the worker posts one notice per write with
 *   a `↩️ 復原` button (`mm:u:<handle>`, routed as a `/memory` button).
 * - A press ({@link MemoryStore.undo}) restores the files as they were, only for the person who
 *   asked and only in the scope the press happens in, and only while the files are still as the
 *   write left them (a later change is never overwritten); the record is used once.
 */
import type { MessageParam } from "../agent/contract.js";
import type { Locale } from "../config.js";
import { localize } from "../i18n.js";
import type { Logger } from "../log.js";
import type { Destination, Outbound } from "../outbound.js";
import { speakerLabel } from "../prompts.js";
import type { IncomingMessage } from "../queue/incoming.js";
import type { ToolBox } from "../toolbox/toolbox.js";
import { isMemoryWrite, type MemoryCommandInput } from "./commands.js";
import type { MemoryScope, MemoryStore } from "./store.js";
import { UNDO_BUTTON_PREFIX, undoHandle } from "./undo-record.js";

export { UNDO_BUTTON_PREFIX, UNDO_TTL_SECONDS, memoryDiff, undoHandle } from "./undo-record.js";
import { MEMORY_ICON, MEMORY_TOOL_NAME, memoryActivity } from "./tool.js";

/** What of the conversation's history the run was given: its messages and whether a summary came first. */
export interface HistorySeen {
  messages: readonly MessageParam[];
  summary?: unknown;
}

/**
 * Whether the run read content from outside the person's own words: the message is forwarded or
 * carries an image or a file; in a group, the history the run was given holds another member's
 * turn (its speaker label is not the asker's) or a summary of earlier turns, or is unknown; or a
 * call of the run (a `tool_use` or `server_tool_use`) is of a tool whose results are outside
 * content (`outside: true`: web search and fetch, MCP tools). Pure.
 */
export function readOutsideContent(
  toolbox: Pick<ToolBox, "get">,
  message: Pick<IncomingMessage, "chatKind" | "media" | "forwarded" | "platform" | "userId" | "userName">,
  messages: readonly MessageParam[],
  history?: HistorySeen,
): boolean {
  if (message.forwarded) return true;
  if (message.media?.some((m) => m.kind === "image" || m.kind === "file")) return true;
  if (message.chatKind === "group" && (!history || history.summary !== undefined || othersSpoke(message, history)))
    return true;
  for (const m of messages) {
    if (typeof m.content === "string") continue;
    for (const b of m.content) {
      if (m.role === "user" && (b.type === "document" || b.type === "image")) return true;
      if ((b.type === "tool_use" || b.type === "server_tool_use") && toolbox.get(b.name)?.outside) return true;
    }
  }
  return false;
}

/** Whether a user turn of `history` starts with another speaker's label than `asker`'s (`speakerLabel`). */
function othersSpoke(asker: Pick<IncomingMessage, "platform" | "userId" | "userName">, history: HistorySeen): boolean {
  const own = speakerLabel(asker);
  const code = own.slice(own.lastIndexOf("#"));
  for (const m of history.messages) {
    if (m.role !== "user") continue;
    const texts =
      typeof m.content === "string" ? [m.content] : m.content.flatMap((b) => (b.type === "text" ? [b.text] : []));
    for (const text of texts) {
      const label = /^\[[^\]]*(#[0-9a-f]{4})\]/.exec(text);
      // The code is the speaker's (from their platform id); a name may change between turns.
      if (label && label[1] !== code) return true;
    }
  }
  return false;
}

/** A memory write to offer for undo: its `tool_use` id and input. */
export interface UndoOffer {
  toolUseId: string;
  input: MemoryCommandInput;
}

/**
 * The run's successful memory writes (a `tool_use` of the memory tool, not `view`, whose
 * `tool_result` is not an error), in call order — when the run read outside content
 * ({@link readOutsideContent}); else none. Pure.
 */
export function undoOffers(
  toolbox: Pick<ToolBox, "get">,
  message: Pick<IncomingMessage, "chatKind" | "media" | "forwarded" | "platform" | "userId" | "userName">,
  messages: readonly MessageParam[],
  history?: HistorySeen,
): UndoOffer[] {
  const offers = memoryWrites(messages);
  // Most runs write no memory: the scan of the history for outside content is left out then.
  if (offers.length === 0 || !readOutsideContent(toolbox, message, messages, history)) return [];
  return offers;
}

/** The run's successful memory writes (see {@link undoOffers}), in call order. */
function memoryWrites(messages: readonly MessageParam[]): UndoOffer[] {
  const ok = new Set<string>();
  for (const m of messages) {
    if (m.role !== "user" || typeof m.content === "string") continue;
    for (const b of m.content) if (b.type === "tool_result" && !b.is_error) ok.add(b.tool_use_id);
  }
  const offers: UndoOffer[] = [];
  for (const m of messages) {
    if (m.role !== "assistant" || typeof m.content === "string") continue;
    for (const b of m.content) {
      if (b.type !== "tool_use" || b.name !== MEMORY_TOOL_NAME || !ok.has(b.id)) continue;
      const input = b.input as MemoryCommandInput;
      if (typeof input?.command === "string" && isMemoryWrite(input.command)) offers.push({ toolUseId: b.id, input });
    }
  }
  return offers;
}

/** Words of the undo notice and its button. */
export const UNDO_TEXT = {
  notice: {
    "zh-TW":
      "{icon} {what}\n這是在讀了外部內容（網頁、檔案、轉傳或別人的訊息）之後寫進記憶的。如果不是你要我記的，請按「復原」。",
    en:
      "{icon} {what}\nThis was written to memory after reading outside content (a web page, a file, " +
      "a forward or someone else's message). If you did not ask me to remember it, press Undo.",
  },
  noticeNoButton: {
    "zh-TW": "{icon} {what}\n這是在讀了外部內容之後寫進記憶的。如果不是你要我記的，用 /memory 查看並刪除。",
    en: "{icon} {what}\nThis was written to memory after reading outside content. If you did not ask me to remember it, see and delete it with /memory.",
  },
  button: { "zh-TW": "↩️ 復原", en: "↩️ Undo" },
  undone: { "zh-TW": "已復原這次記憶的變更。", en: "Undone: memory is as it was before." },
  gone: {
    "zh-TW": "這次記憶的變更已經不能復原（已復原或超過 7 天）。",
    en: "This memory change can no longer be undone (already undone, or older than 7 days).",
  },
  notYours: {
    "zh-TW": "只有當時提問的人可以復原。",
    en: "Only the person who asked at the time can undo this.",
  },
  changedSince: {
    "zh-TW": "記憶之後又改過了，沒有復原；請用 /memory 查看。",
    en: "Memory changed since then, so nothing was undone; see /memory.",
  },
} as const;

/** The text of the undo notice of `offer` in `locale` (with or without the button's words). */
export function undoNoticeText(offer: UndoOffer, locale: Locale, withButton: boolean): string {
  return localize(locale, withButton ? UNDO_TEXT.notice : UNDO_TEXT.noticeNoButton, {
    icon: MEMORY_ICON,
    what: memoryActivity(offer.input, locale),
  });
}

/**
 * Posts one undo notice per offered write whose undo record still exists (a retried job offers
 * only what can be undone), in the conversation of `to` (mentioning the asker in groups): with a
 * `↩️ 復原` button where the outbound has buttons, else pointing to `/memory`. A failure is logged,
 * never thrown: the answer is out already.
 */
export async function sendUndoNotices(parts: {
  outbound: Pick<Outbound, "sendAnswer" | "sendNotice">;
  to: Destination;
  store: MemoryStore;
  scope: MemoryScope;
  offers: readonly UndoOffer[];
  locale: Locale;
  log: Logger;
}): Promise<void> {
  const { outbound, to, store, scope, locale, log } = parts;
  for (const offer of parts.offers) {
    try {
      const handle = undoHandle(offer.toolUseId);
      if (!(await store.canUndo(scope, handle))) continue;
      if (outbound.sendNotice)
        await outbound.sendNotice(to, undoNoticeText(offer, locale, true), [
          { label: localize(locale, UNDO_TEXT.button), data: `${UNDO_BUTTON_PREFIX}${handle}` },
        ]);
      else await outbound.sendAnswer(to, undoNoticeText(offer, locale, false));
      log.info({ scope: scope.kind, command: offer.input.command }, "memory write after outside content: undo offered");
    } catch (err) {
      log.warn({ err }, "could not offer to undo a memory write");
    }
  }
}
