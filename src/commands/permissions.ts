/**
 * `/permissions`: the asker's "always allow" grants in this conversation (see
 * `src/approvals/grants.ts`), each with a revoke button, and what a press on such a button does.
 * Platform-neutral: an adapter passes the button data, who pressed and where, and shows the notice.
 *
 * A revoke button carries `pm:<tool hash>:<owner userId>`: 16 characters of base64url SHA-256 of
 * the tool name (a tool name may be 64 characters, too long for Telegram's 64-byte
 * `callback_data` with a prefix) and the owner's id (`pm:` + 16 + `:` is 20 bytes, which leaves
 * 44 for the id). Only the owner's press counts, and it is looked up among the presser's own
 * grants in the conversation the list was posted in, so nobody can revoke another person's grant,
 * or a grant of another chat.
 */
import { createHash } from "node:crypto";
import type { GrantOwner, GrantStore } from "../approvals/grants.js";
import { localize, type Locale } from "../i18n.js";
import { conversationOf, type ConversationRef } from "../queue/incoming.js";
import { timeInWords } from "../reminders/time.js";

/** Most revoke buttons on one listing (Discord allows 25 buttons on a message). */
export const MAX_PERMISSION_BUTTONS = 25;

const BUTTON = /^pm:([A-Za-z0-9_-]{16}):(.{1,44})$/s;

/** Words of `/permissions` and its buttons. */
export const PERMISSION_TEXT = {
  title: {
    "zh-TW": "你在這裡「一律允許」的工具（到期前不再詢問你）：",
    en: "Tools you always allow here (you are not asked until they expire):",
  },
  line: { "zh-TW": "• {tool} — 到 {time}", en: "• {tool} — until {time}" },
  none: {
    "zh-TW": "你在這裡沒有「一律允許」的工具。需要確認的動作，可以在確認提示上按「一律允許」。",
    en: "You have no “always allow” grants here. On a confirmation prompt, press “Always allow” to add one.",
  },
  consoleHint: { "zh-TW": "撤銷：輸入 /permissions <工具名稱>", en: "To revoke one, type /permissions <tool name>" },
  button: { "zh-TW": "🚫 撤銷 {tool}", en: "🚫 Revoke {tool}" },
  revoked: { "zh-TW": "已撤銷：之後使用 {tool} 會再詢問你。", en: "Revoked: {tool} will ask you again." },
  gone: { "zh-TW": "這個授權已經撤銷或過期了。", en: "This grant was already revoked or has expired." },
  notOwner: {
    "zh-TW": "這是別人的授權，只有本人可以撤銷。",
    en: "These are someone else's grants: only they can revoke them.",
  },
  unknownTool: { "zh-TW": "你在這裡沒有「{tool}」的一律允許。", en: "You have no “always allow” for “{tool}” here." },
  unavailable: { "zh-TW": "這裡無法使用「一律允許」。", en: "“Always allow” is not available here." },
  tryAgain: {
    "zh-TW": "暫時無法處理，請稍後再按一次。",
    en: "Could not do that right now; please press again in a moment.",
  },
} as const;

/** True when `data` is a revoke button's data (`pm:…`), so the adapter hands the press here. */
export function isPermissionButton(data: string): boolean {
  return data.startsWith("pm:");
}

/** 16 characters of base64url SHA-256 of a tool name (the button's handle on it). */
export function toolHandle(tool: string): string {
  return createHash("sha256").update(tool).digest("base64url").slice(0, 16);
}

/** A revoke button's data: `pm:<tool hash>:<userId>` (at most 64 bytes for ids of up to 44 ASCII characters). */
export function permissionButtonData(userId: string, tool: string): string {
  return `pm:${toolHandle(tool)}:${userId}`;
}

/** Reads a revoke button's data; undefined for anything else. */
export function parsePermissionButton(data: string): { handle: string; userId: string } | undefined {
  const m = BUTTON.exec(data);
  return m ? { handle: m[1]!, userId: m[2]! } : undefined;
}

/**
 * The `/permissions` reply: text (Markdown, as every command's reply; a tool's name, `[A-Za-z0-9_-]`,
 * reads as it is) and one revoke button per grant (at most {@link MAX_PERMISSION_BUTTONS}).
 */
export interface PermissionsListing {
  text: string;
  buttons: { label: string; data: string }[];
}

/**
 * The asker's grants in their conversation, each as a line with its expiry (in `timezone`) and a
 * revoke button. The console, which has no buttons, gets a line saying how to revoke by name.
 * @throws when Redis is unreachable.
 */
export async function permissionsListing(
  asker: GrantOwner & { locale: Locale; timezone: string },
  grants: GrantStore,
): Promise<PermissionsListing> {
  const { locale } = asker;
  const list = await grants.list(asker);
  if (list.length === 0) return { text: localize(locale, PERMISSION_TEXT.none), buttons: [] };
  const lines = list.map((g) =>
    localize(locale, PERMISSION_TEXT.line, { tool: g.tool, time: timeInWords(g.expiresAt, asker.timezone, locale) }),
  );
  const hint = asker.platform === "console" ? [`\n${localize(locale, PERMISSION_TEXT.consoleHint)}`] : [];
  return {
    text: [localize(locale, PERMISSION_TEXT.title), ...lines, ...hint].join("\n"),
    buttons:
      asker.platform === "console"
        ? []
        : list.slice(0, MAX_PERMISSION_BUTTONS).map((g) => ({
            label: localize(locale, PERMISSION_TEXT.button, { tool: g.tool }),
            data: permissionButtonData(asker.userId, g.tool),
          })),
  };
}

/**
 * `/permissions <tool>`: revokes the asker's grant of that tool in their conversation.
 * @returns the reply text. @throws when Redis is unreachable.
 */
export async function revokeByName(
  asker: GrantOwner & { locale: Locale },
  tool: string,
  grants: GrantStore,
): Promise<string> {
  const name = tool.trim().slice(0, 64);
  const removed = await grants.revoke(asker, name);
  return localize(asker.locale, removed ? PERMISSION_TEXT.revoked : PERMISSION_TEXT.unknownTool, { tool: name });
}

/** A press on a revoke button: its data, who pressed, and the conversation of the pressed message. */
export interface PermissionPress extends ConversationRef {
  data: string;
  userId: string;
}

/** The answer to a press: a short notice for the presser, and whether a grant was revoked (the adapter may drop that button). */
export interface PermissionPressAnswer {
  notice: string;
  revoked: boolean;
}

/**
 * Handles a press on a revoke button: refuses anyone but the owner; otherwise removes the
 * presser's grant of that tool in the pressed message's conversation (at once for every worker:
 * grants are read from Redis at each call).
 * @throws when Redis is unreachable (the adapter answers "try again").
 */
export async function pressPermissionButton(
  press: PermissionPress,
  grants: GrantStore,
  locale: Locale,
): Promise<PermissionPressAnswer> {
  const parsed = parsePermissionButton(press.data);
  if (!parsed) return { notice: localize(locale, PERMISSION_TEXT.gone), revoked: false };
  if (parsed.userId !== press.userId) return { notice: localize(locale, PERMISSION_TEXT.notOwner), revoked: false };
  const owner: GrantOwner = { ...conversationOf(press), userId: press.userId };
  const grant = (await grants.list(owner)).find((g) => toolHandle(g.tool) === parsed.handle);
  if (!grant || !(await grants.revoke(owner, grant.tool)))
    return { notice: localize(locale, PERMISSION_TEXT.gone), revoked: false };
  return { notice: localize(locale, PERMISSION_TEXT.revoked, { tool: grant.tool }), revoked: true };
}
