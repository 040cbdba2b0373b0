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

/** The env lists that allow users: admins, then `ALLOWED_USERS`. */
export const USER_ENV_LISTS = ["ADMIN_USERS", "ALLOWED_USERS"] as const;

/** The env list that allows chats (groups, Discord servers and channels). */
export const CHAT_ENV_LISTS = ["ALLOWED_CHATS"] as const;

/** The name of an env list of users or chats. */
export type EnvListName = (typeof USER_ENV_LISTS)[number] | (typeof CHAT_ENV_LISTS)[number];

/**
 * The env list that allows `principal` as a `kind` (a user: `ADMIN_USERS`, then `ALLOWED_USERS`;
 * a chat: `ALLOWED_CHATS`), for "it still has access through …" and refusals such as "revoke an
 * env-listed user". A user's lists are never looked at for a chat, nor a chat's for a user: a
 * person in `ADMIN_USERS` does not make the chat of the same id env-listed.
 * @returns the list's name, or undefined when no list of that kind names it.
 */
export function envListOf(
  config: Pick<Config, EnvListName>,
  principal: string,
  kind: "user" | "chat",
): EnvListName | undefined {
  return (kind === "user" ? USER_ENV_LISTS : CHAT_ENV_LISTS).find((list) => config[list].includes(principal));
}

/**
 * What a parsed `platform:id` ({@link parsePrincipal}) names, when its id tells: a Telegram id is
 * a person when positive and a group, supergroup or channel when negative; a LINE id is a person
 * when it starts with `U`, a group (`C`) or multi-person chat (`R`) otherwise. Discord ids
 * (snowflakes) do not tell a user from a server or channel: undefined.
 */
export function principalKind(principal: string): "person" | "group" | undefined {
  if (principal.startsWith("telegram:")) return principal.startsWith("telegram:-") ? "group" : "person";
  if (principal.startsWith("line:")) return principal.startsWith("line:U") ? "person" : "group";
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
