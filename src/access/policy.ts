/**
 * The access policy as the configuration states it: who is an admin, which users and chats the
 * env lists allow. Redis grants (`store.ts`) add to these lists; nothing here touches Redis.
 */
import type { Config } from "../config.js";

/** Who wrote a message, and where: what the policy looks at. */
export interface AccessSubject {
  platform: string;
  chatId: string;
  chatKind: "dm" | "group";
  userId: string;
  /** Discord guild of a server channel (`reply.guildId` of an incoming message). */
  guildId?: string | undefined;
}

/** `platform:userId` of the subject. */
export function userPrincipal(subject: Pick<AccessSubject, "platform" | "userId">): string {
  return `${subject.platform}:${subject.userId}`;
}

/**
 * The `platform:id` forms that allow a group message: the chat itself, and on Discord its guild
 * (`discord:<guildId>` allows a whole server).
 */
export function chatPrincipals(subject: Pick<AccessSubject, "platform" | "chatId" | "guildId">): string[] {
  const out = [`${subject.platform}:${subject.chatId}`];
  if (subject.platform === "discord" && subject.guildId) out.push(`discord:${subject.guildId}`);
  return out;
}

/**
 * Whether the subject is a bot admin (`ADMIN_USERS`). The console user (`npm run chat`, the
 * operator at the shell that holds the keys) counts as one.
 */
export function isAdmin(
  config: Pick<Config, "ADMIN_USERS">,
  subject: Pick<AccessSubject, "platform" | "userId">,
): boolean {
  return subject.platform === "console" || config.ADMIN_USERS.includes(userPrincipal(subject));
}

/** Where a `platform:id` comes from in the env lists, for refusals such as "revoke an env-listed user". */
export function envListOf(
  config: Pick<Config, "ADMIN_USERS" | "ALLOWED_USERS" | "ALLOWED_CHATS">,
  principal: string,
): "ADMIN_USERS" | "ALLOWED_USERS" | "ALLOWED_CHATS" | undefined {
  if (config.ADMIN_USERS.includes(principal)) return "ADMIN_USERS";
  if (config.ALLOWED_USERS.includes(principal)) return "ALLOWED_USERS";
  if (config.ALLOWED_CHATS.includes(principal)) return "ALLOWED_CHATS";
  return undefined;
}

/** Whether the env lists alone allow the subject (admins, `ALLOWED_USERS` in DMs, `ALLOWED_CHATS` in groups). */
export function allowedByEnv(
  config: Pick<Config, "ADMIN_USERS" | "ALLOWED_USERS" | "ALLOWED_CHATS">,
  subject: AccessSubject,
): boolean {
  if (isAdmin(config, subject)) return true;
  if (subject.chatKind === "dm") return config.ALLOWED_USERS.includes(userPrincipal(subject));
  return chatPrincipals(subject).some((p) => config.ALLOWED_CHATS.includes(p));
}

/**
 * Parses `platform:id` for the CLI and `/approve`: `telegram` or `discord` and an integer id, or
 * `line` and a LINE id (`U`, `C` or `R` and 32 hex digits: a user, group or multi-person chat,
 * https://developers.line.biz/en/reference/messaging-api/#source-user); undefined otherwise.
 */
export function parsePrincipal(raw: string): string | undefined {
  const line = /^line:([UCR])([0-9a-f]{32})$/i.exec(raw.trim());
  if (line) return `line:${line[1]!.toUpperCase()}${line[2]!.toLowerCase()}`;
  const match = /^(telegram|discord):(-?\d{1,21})$/i.exec(raw.trim());
  return match ? `${match[1]!.toLowerCase()}:${match[2]}` : undefined;
}
