/**
 * The access rule itself, for every place that acts for someone: the access gate for each
 * incoming message (`gate.ts`), and work that runs later without a message — reminders at
 * delivery (`src/reminders/delivery.ts`) and scheduled tasks at each occurrence — so a revoked
 * user or a disabled group stops getting them.
 */
import type { Config } from "../config.js";
import { allowedByEnv, chatPrincipals, isAdmin, userPrincipal, type AccessSubject } from "./policy.js";
import type { AccessStore } from "./store.js";

/**
 * Whether `subject` may use the bot in its chat now: always under `ACCESS_POLICY=open`, on the
 * console and for admins (`ADMIN_USERS`); otherwise in a DM when the user is allowed (`ALLOWED_USERS`,
 * or approved / allowed at run time and not revoked), in a group when the chat is allowed
 * (`ALLOWED_CHATS`, `/enable`, `allow-chat`; on Discord also its whole server, `discord:<guildId>`,
 * so pass `guildId` for a server channel) — in an allowed group every member is served. Read from
 * Redis each time (one command), so a revoke counts at once on every process.
 *
 * @throws when Redis fails.
 */
export function hasAccess(
  config: Pick<Config, "ACCESS_POLICY" | "ADMIN_USERS" | "ALLOWED_USERS" | "ALLOWED_CHATS">,
  access: AccessStore,
  subject: AccessSubject,
): Promise<boolean> {
  if (
    config.ACCESS_POLICY === "open" ||
    subject.platform === "console" ||
    isAdmin(config, subject) ||
    allowedByEnv(config, subject)
  )
    return Promise.resolve(true);
  return subject.chatKind === "dm"
    ? access.hasUser(userPrincipal(subject))
    : access.hasAnyChat(chatPrincipals(subject));
}
