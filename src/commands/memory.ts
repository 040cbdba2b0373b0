/**
 * `/memory` and `/forget`: what the bot remembers in this scope (the asker's personal memory in a
 * private chat, the group's shared memory in a group: `memoryScopeOf`), file by file with a delete
 * button per file and one to delete everything; and erasing it. Platform-neutral: an adapter
 * passes the button data, who pressed and where, and shows the notice.
 *
 * Who may delete: in a private chat its person (the only one who can press there); in a group its
 * administrators and the bot's admins (anyone may look). A delete button carries
 * `mm:f:<path hash>` (16 characters of base64url SHA-256 of the file's path) or `mm:a` (everything:
 * it asks first, and its ⚠️ button `mm:A:<fingerprint>` erases only the files it named, `mm:c` keeps them;
 * `/forget` asks the same question with the same buttons);
 * the scope is never in the data: it is the pressed message's chat and the presser, so a button
 * can only ever delete in the scope the press happens in. An undo button (`mm:u:<handle>`, posted
 * after a memory write made when outside content was read, `src/memory/undo.ts`) is pressed by
 * the person whose answer wrote it. Erased is gone from Redis at once, for
 * every worker (memory is read from Redis for each request).
 */
import { createHash } from "node:crypto";
import type { ButtonListing } from "../feature.js";
import { englishNoun, localize, type Locale } from "../i18n.js";
import { formatSize } from "../memory/commands.js";
import {
  fileBytes,
  memoryFingerprint,
  memoryScopeOf,
  scopeName,
  totalBytes,
  type MemoryFile,
  type MemoryScope,
  type MemoryStore,
} from "../memory/store.js";
import { UNDO_TEXT } from "../memory/undo.js";
import { plainLine } from "../plain-text.js";
import type { Platform } from "../queue/incoming.js";
import type { CommandReply } from "./command.js";

/** Longest text of one file shown by `/memory`, in characters (code points). */
export const MAX_SHOWN_FILE_CHARS = 400;

/** Longest `/memory` listing, in characters (UTF-16 units): within one Telegram message (4096) with room for the title. */
export const MAX_LISTING_CHARS = 3500;

const BUTTON = /^mm:(?:f:([A-Za-z0-9_-]{16})|a)$/;
/** The answer to "delete all"'s question: `mm:A:<fingerprint>` erases (when the memory is unchanged), `mm:c` keeps. */
const ERASE_BUTTON = /^mm:(?:A:([A-Za-z0-9_-]{16})|c)$/;
/** An undo button of a memory write made after outside content was read: `mm:u:<handle>` (`src/memory/undo.ts`). */
const UNDO_BUTTON = /^mm:u:([A-Za-z0-9_-]{16})$/;

/** The parameters of a text naming a number of memory files: `{count}`, and `{files}`, its English noun. */
function fileCount(count: number): { count: number; files: string } {
  return { count, files: englishNoun(count, "file") };
}

/** Words of `/memory`, `/forget` and their buttons (`/forget` asks with the delete-all question's words). */
export const MEMORY_TEXT = {
  personalTitle: {
    "zh-TW": "我記得的事（你的個人記憶，只在私訊中使用，{bytes}／{max}）：",
    en: "What I remember (your personal memory, used only in private chats, {bytes} of {max}):",
  },
  groupTitle: {
    "zh-TW": "這個群組的共同記憶（所有成員共用，{bytes}／{max}）：",
    en: "This group's shared memory (shared by every member, {bytes} of {max}):",
  },
  personalNone: {
    "zh-TW": "我還沒有記住關於你的事。想讓我記得什麼，直接告訴我（例如「記得我住在新竹」）。",
    en: "I don't remember anything about you yet. Tell me what to keep (e.g. “remember that I live in Hsinchu”).",
  },
  groupNone: { "zh-TW": "這個群組還沒有共同記憶。", en: "This group has no shared memory yet." },
  file: { "zh-TW": "📄 {name}（{size}，{date} 更新）", en: "📄 {name} ({size}, updated {date})" },
  more: { "zh-TW": "…還有 {count} 個檔案（太長，未顯示）。", en: "…and {count} more {files} (too long to show)." },
  off: {
    "zh-TW": "（記憶功能目前關閉：這些不會用在回答中。）",
    en: "(Memory is turned off: these are not used in answers.)",
  },
  consoleHint: { "zh-TW": "全部清除：輸入 /forget", en: "To erase everything, type /forget" },
  consoleConfirm: {
    "zh-TW": "輸入 y 確定全部刪除，輸入 n 取消。",
    en: "Type y to delete it all, or n to cancel.",
  },
  deleteButton: { "zh-TW": "🗑 刪除 {name}", en: "🗑 Delete {name}" },
  deleteAllButton: { "zh-TW": "🗑 全部刪除", en: "🗑 Delete all" },
  groupReadOnly: {
    "zh-TW": "（只有群組管理員可以刪除共同記憶。）",
    en: "(Only the group's administrators can delete its shared memory.)",
  },
  deleted: { "zh-TW": "已刪除 {name}。", en: "Deleted {name}." },
  gone: { "zh-TW": "這個記憶已經刪除了。", en: "That memory was already deleted." },
  erasedPersonal: {
    "zh-TW": "已清除你的個人記憶（{count} 個檔案）。對話紀錄不受影響（要清除請用 /reset）。",
    en: "Your personal memory is erased ({count} {files}). The conversation itself is kept (use /reset for that).",
  },
  erasedGroup: {
    "zh-TW": "已清除這個群組的共同記憶（{count} 個檔案）。",
    en: "This group's shared memory is erased ({count} {files}).",
  },
  nothingToErase: { "zh-TW": "沒有需要清除的記憶。", en: "There is no memory to erase." },
  confirmErasePersonal: {
    "zh-TW": "確定要清除你的全部個人記憶（{count} 個檔案）嗎？清除後無法復原。",
    en: "Erase all of your personal memory ({count} {files})? This cannot be undone.",
  },
  confirmEraseGroup: {
    "zh-TW": "確定要清除這個群組的全部共同記憶（{count} 個檔案）嗎？清除後無法復原。",
    en: "Erase all of this group's shared memory ({count} {files})? This cannot be undone.",
  },
  confirmEraseNotice: { "zh-TW": "請確認是否全部刪除。", en: "Please confirm." },
  confirmEraseButton: { "zh-TW": "⚠️ 確定全部刪除", en: "⚠️ Yes, delete all" },
  keepButton: { "zh-TW": "取消", en: "Cancel" },
  kept: { "zh-TW": "已取消，記憶沒有變更。", en: "Cancelled; the memory is unchanged." },
  changedSinceAsked: {
    "zh-TW": "記憶在詢問之後有變更，所以沒有清除。請再傳送 /memory 查看。",
    en: "The memory changed after you were asked, so nothing was erased. Send /memory to see it again.",
  },
  notAllowed: {
    "zh-TW": "在群組裡只有群組管理員可以刪除共同記憶。",
    en: "In a group only its administrators may delete the shared memory.",
  },
  unavailable: { "zh-TW": "這裡無法使用記憶功能。", en: "Memory is not available here." },
  tryAgain: {
    "zh-TW": "暫時無法處理，請稍後再按一次。",
    en: "Could not do that right now; please press again in a moment.",
  },
} as const;

/** True when `data` is a `/memory` delete button's data (`mm:…`), so the adapter hands the press here. */
export function isMemoryButton(data: string): boolean {
  return data.startsWith("mm:");
}

/** 16 characters of base64url SHA-256 of a memory path (a delete button's handle on its file). */
export function pathHandle(path: string): string {
  return createHash("sha256").update(path).digest("base64url").slice(0, 16);
}

/** The name of a file as people read it: `/memories/家人.md` → `家人.md`. */
function shownName(path: string): string {
  return plainLine(path.replace(/^\/memories\//, ""), 40);
}

/** `text` cut to `max` code points, ending with `…` when cut. */
function cut(text: string, max: number): string {
  const chars = [...text];
  return chars.length > max ? `${chars.slice(0, max - 1).join("")}…` : text;
}

/** Where `/memory` or `/forget` is used, and by whom. */
export interface MemoryAsker {
  platform: Platform;
  chatKind: "dm" | "group";
  chatId: string;
  userId: string;
  locale: Locale;
  timezone: string;
}

/**
 * The `/memory` reply: the scope's files, each with its name, size, last change and text (cut to
 * {@link MAX_SHOWN_FILE_CHARS}; the whole listing to {@link MAX_LISTING_CHARS}), a delete button per
 * file and one for everything (on the console, which has no buttons, a line naming `/forget`).
 * Plain text: it holds the model's words.
 *
 * @param options.maxBytes - `MEMORY_MAX_BYTES`, shown as the room; `options.off` notes `MEMORY=off`;
 *   `options.mayDelete` false (a group member who is neither its administrator nor a bot admin):
 *   no delete buttons, a line saying who may delete instead.
 * @throws when Redis is unreachable.
 */
export async function memoryListing(
  asker: MemoryAsker,
  store: MemoryStore,
  options: { maxBytes: number; off: boolean; mayDelete?: boolean },
): Promise<CommandReply> {
  const { locale } = asker;
  const scope = memoryScopeOf(asker);
  const files = await store.read(scope);
  if (files.length === 0)
    return { text: localize(locale, scope.kind === "personal" ? MEMORY_TEXT.personalNone : MEMORY_TEXT.groupNone) };
  const title = localize(locale, scope.kind === "personal" ? MEMORY_TEXT.personalTitle : MEMORY_TEXT.groupTitle, {
    bytes: formatSize(totalBytes(files)),
    max: formatSize(options.maxBytes),
  });
  const parts = [title, ...(options.off ? [localize(locale, MEMORY_TEXT.off)] : [])];
  let length = parts.join("\n").length;
  let shown = 0;
  for (const file of files) {
    const date = new Intl.DateTimeFormat("en-CA", {
      timeZone: asker.timezone,
      year: "numeric",
      month: "2-digit",
      day: "2-digit",
    }).format(new Date(file.updatedAt));
    const heading = localize(locale, MEMORY_TEXT.file, {
      name: shownName(file.path),
      size: formatSize(fileBytes(file)),
      date,
    });
    const entry = `\n${heading}\n${cut(file.text.trim(), MAX_SHOWN_FILE_CHARS)}`;
    if (length + entry.length > MAX_LISTING_CHARS) break;
    parts.push(entry);
    length += entry.length;
    shown += 1;
  }
  if (shown < files.length) parts.push(`\n${localize(locale, MEMORY_TEXT.more, fileCount(files.length - shown))}`);
  if (asker.platform === "console")
    return { text: [...parts, `\n${localize(locale, MEMORY_TEXT.consoleHint)}`].join("\n") };
  if (options.mayDelete === false)
    return { text: [...parts, `\n${localize(locale, MEMORY_TEXT.groupReadOnly)}`].join("\n") };
  const buttons = [
    ...files.slice(0, shown).map((f) => ({
      label: localize(locale, MEMORY_TEXT.deleteButton, { name: cut(shownName(f.path), 30) }),
      data: `mm:f:${pathHandle(f.path)}`,
    })),
    { label: localize(locale, MEMORY_TEXT.deleteAllButton), data: "mm:a" },
  ];
  return { text: parts.join("\n"), buttons };
}

/**
 * The question "erase all N files?" of `/forget` and of the listing's 🗑 全部刪除, with its
 * ⚠️ button (`mm:A:<fingerprint>`: erases only the files it names, when the memory is still
 * those) and its Cancel button (`mm:c`).
 */
function eraseQuestion(scope: MemoryScope, files: MemoryFile[], locale: Locale): Required<ButtonListing> {
  return {
    text: localize(
      locale,
      scope.kind === "personal" ? MEMORY_TEXT.confirmErasePersonal : MEMORY_TEXT.confirmEraseGroup,
      fileCount(files.length),
    ),
    buttons: [
      { label: localize(locale, MEMORY_TEXT.confirmEraseButton), data: `mm:A:${memoryFingerprint(files)}` },
      { label: localize(locale, MEMORY_TEXT.keepButton), data: "mm:c" },
    ],
  };
}

/**
 * `/forget`: asks first, as the listing's 🗑 全部刪除 does — "erase all N files?" with the same
 * ⚠️ and Cancel buttons, answered by the same press handler ({@link pressMemoryButton}), which
 * erases the scope's memory (the asker's own in a private chat; the group's in a group, where the
 * command runner lets only its administrators and bot admins run it, and only they may press).
 * The console, which has no buttons, asks for a typed `y` or `n` (`CommandReply.typed`). Nothing
 * stored: says so, with no question. Nothing is erased here.
 * @returns the reply. @throws when Redis is unreachable.
 */
export async function forgetMemory(asker: MemoryAsker, store: MemoryStore): Promise<CommandReply> {
  const scope = memoryScopeOf(asker);
  const files = await store.read(scope);
  if (files.length === 0) return { text: localize(asker.locale, MEMORY_TEXT.nothingToErase) };
  const question = eraseQuestion(scope, files, asker.locale);
  if (asker.platform !== "console") return question;
  const [yes, no] = question.buttons;
  return {
    text: `${question.text}\n${localize(asker.locale, MEMORY_TEXT.consoleConfirm)}`,
    typed: { yes: yes!.data, no: no!.data },
  };
}

/** A press on a `/memory` button: its data, who pressed, where, and whether they may delete a group's memory. */
export interface MemoryPress {
  data: string;
  platform: Platform;
  chatId: string;
  chatKind: "dm" | "group";
  userId: string;
  locale: Locale;
  /** True for a bot admin (`ADMIN_USERS`). */
  admin: boolean;
  /** Whether the presser administers the group; asked only in a group and only when not `admin`. */
  isGroupAdmin?: (() => Promise<boolean>) | undefined;
}

/**
 * The answer to a press: a notice for the presser; `deletedFile` (drop that button), `closeText`
 * (close the listing to that text), or `confirm` (show this question with its buttons in place of
 * the listing: "delete all" asks first).
 */
export interface MemoryPressAnswer {
  notice: string;
  deletedFile?: boolean;
  closeText?: string;
  confirm?: Required<ButtonListing>;
}

/**
 * Handles a press on a `/memory` button (see the module comment): in a group only its
 * administrators and bot admins may delete; the file (or every file) goes from the scope of the
 * pressed message's chat and the presser. "Delete all" asks first (how many files): its ⚠️ button
 * erases them only if the memory is still what the question named, its other button keeps them.
 * @throws when Redis is unreachable (the caller answers "try again").
 */
export async function pressMemoryButton(press: MemoryPress, store: MemoryStore): Promise<MemoryPressAnswer> {
  const { locale } = press;
  const undo = UNDO_BUTTON.exec(press.data);
  if (undo) {
    // An undo button (src/memory/undo.ts): the person whose answer wrote it, in the scope pressed in.
    const outcome = await store.undo(memoryScopeOf(press), undo[1]!, press.userId);
    const words = {
      undone: UNDO_TEXT.undone,
      gone: UNDO_TEXT.gone,
      not_yours: UNDO_TEXT.notYours,
      changed: UNDO_TEXT.changedSince,
    };
    return { notice: localize(locale, words[outcome]), ...(outcome === "undone" ? { deletedFile: true } : {}) };
  }
  const parsed = BUTTON.exec(press.data);
  const erase = parsed ? undefined : ERASE_BUTTON.exec(press.data);
  if (!parsed && !erase) return { notice: localize(locale, MEMORY_TEXT.gone) };
  if (press.chatKind === "group" && !press.admin && !(await press.isGroupAdmin?.().catch(() => false)))
    return { notice: localize(locale, MEMORY_TEXT.notAllowed) };
  const scope: MemoryScope = memoryScopeOf(press);
  const erased = (count: number) =>
    localize(
      locale,
      scope.kind === "personal" ? MEMORY_TEXT.erasedPersonal : MEMORY_TEXT.erasedGroup,
      fileCount(count),
    );
  if (erase) {
    // The question's answer: keep, or erase what it named (not a memory written or erased since).
    if (erase[1] === undefined) {
      const text = localize(locale, MEMORY_TEXT.kept);
      return { notice: text, closeText: text };
    }
    const outcome = await store.eraseIfUnchanged(scope, erase[1]);
    const text = outcome === "changed" ? localize(locale, MEMORY_TEXT.changedSinceAsked) : erased(outcome);
    return { notice: text, closeText: text };
  }
  const handle = parsed![1];
  if (handle === undefined) {
    // Everything at once is asked first, naming how many files; only the question's button erases them.
    const files = await store.read(scope);
    if (files.length === 0) {
      const text = localize(locale, MEMORY_TEXT.nothingToErase);
      return { notice: text, closeText: text };
    }
    return { notice: localize(locale, MEMORY_TEXT.confirmEraseNotice), confirm: eraseQuestion(scope, files, locale) };
  }
  const file = (await store.read(scope)).find((f) => pathHandle(f.path) === handle);
  if (!file || !(await store.deleteFile(scope, file.path))) return { notice: localize(locale, MEMORY_TEXT.gone) };
  return { notice: localize(locale, MEMORY_TEXT.deleted, { name: shownName(file.path) }), deletedFile: true };
}

/** `platform:id` of the scope a command or press acts on, for the log line (never the contents). */
export function scopeOfAsker(asker: Pick<MemoryAsker, "platform" | "chatKind" | "chatId" | "userId">): string {
  const scope = memoryScopeOf(asker);
  return `${scope.kind}:${scopeName(scope)}`;
}
