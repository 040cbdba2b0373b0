/**
 * `npm run access -- <command>`: who may use the bot, changed while it runs (the state lives in
 * Redis, shared by every adapter process).
 *
 *   list                          policy, admins, allowed users and chats (env and granted), pending codes,
 *                                 pairing requests turned away in the last day
 *   approve <CODE>                lets a stranger in (their pairing code) and tells them so
 *   allow <platform:userId>       lets a user in (one in ADMIN_USERS or ALLOWED_USERS is said to be in already: no grant)
 *   revoke <platform:userId>      takes a granted user out (one also in ADMIN_USERS or ALLOWED_USERS is said to keep access)
 *   allow-chat <platform:chatId>  lets the bot answer in a group, a Discord server or channel (a person's id is refused)
 *   revoke-chat <platform:chatId> takes a granted chat out (one also in ALLOWED_CHATS is said to keep access)
 *   usage [platform:userId]       tokens today and this month (the whole bot and top users, or one user)
 *   memory <platform:userId>      a person's personal memory, file by file (a data request)
 *   forget <platform:userId>      erases a person's personal memory (gone for every worker at once)
 *
 * Reads `.env`. Uses `REDIS_URL`, or the private redis-server of this folder (`.data/redis`, see
 * `src/local-redis.ts`), started for the command when no `npm start` or `npm run chat` runs it, as
 * `npm run trace` does. Exit code 0 on success, 1 when the code,
 * user or chat was not found, 2 on bad arguments or configuration, or when Redis cannot be reached.
 */
import { envListOf, parsePrincipal, principalKind } from "../access/policy.js";
import { AccessStore, PAIRING_CODES_PER_PLATFORM_PER_HOUR, PAIRING_CODES_PER_USER_PER_DAY } from "../access/store.js";
import { dmTo, loadPlatform } from "../app.js";
import { approvedAlreadyText, COMMAND_TEXT } from "../commands/catalog.js";
import { formatAllUsage, formatUserUsage } from "../commands/usage-report.js";
import { type Config } from "../config.js";
import { englishCount, localize } from "../i18n.js";
import { createLogger, redact } from "../log.js";
import { closestKnownName } from "../config-spelling.js";
import { plainLine } from "../plain-text.js";
import type { Platform } from "../queue/incoming.js";
import { isEntryPoint, loadCliConfig, runAsProgram, type CliIo } from "./io.js";
import { withCliRedis } from "./redis.js";
import { UsageStore } from "../usage/store.js";
import { fileBytes, memoryKey, MemoryStore, totalBytes } from "../memory/store.js";
import { redisAddress, type RedisClient } from "../redis.js";
import { DateTime } from "luxon";

/**
 * A time for the operator, in the bot's `TIMEZONE` with its offset (ISO 8601 to the second:
 * `2026-12-08T06:20:10+08:00`), not in UTC. @param ms - ms since the Unix epoch.
 */
function localTime(ms: number, timezone: string): string {
  return DateTime.fromMillis(ms, { zone: timezone }).toFormat("yyyy-MM-dd'T'HH:mm:ssZZ");
}

const USAGE = `usage: npm run access -- <command>
  list                           policy, admins, allowed users and chats, pending pairing codes
  approve <CODE>                 let a stranger in with their pairing code (they are told)
  allow <platform:userId>        let a user in            (platform: telegram | discord | line)
  revoke <platform:userId>       take a granted user out
  allow-chat <platform:chatId>   let the bot answer in a group (telegram:<chatId>), a Discord server (discord:<guildId>) or channel
  revoke-chat <platform:chatId>  take a granted chat out
  usage [platform:userId]        tokens today and this month: the whole bot and the top users, or one user
  memory <platform:userId>       a person's personal memory, file by file (what the bot remembers about them)
  forget <platform:userId>       erase a person's personal memory`;

/** The commands of {@link USAGE}, as typed. */
const COMMANDS = ["list", "approve", "allow", "revoke", "allow-chat", "revoke-chat", "usage", "memory", "forget"];

/**
 * Why `command` is not one of {@link COMMANDS}: `unknown command "bogus"`, with the closest
 * command when one is near (`unknown command "alow" (did you mean "allow"?)`, as
 * {@link closestKnownName} finds misspelled variables); undefined when it is a command.
 */
export function unknownCommand(command: string): string | undefined {
  if (COMMANDS.includes(command)) return undefined;
  const near = closestKnownName(
    command.toUpperCase(),
    COMMANDS.map((c) => c.toUpperCase()),
  )?.toLowerCase();
  return `unknown command "${plainLine(command, 40)}"${near ? ` (did you mean "${near}"?)` : ""}`;
}

/** Runs one command; returns the exit code. Output goes to `io.out` (stdout) and `io.err` (stderr). */
async function run(argv: string[], config: Config, redis: RedisClient, io: CliIo): Promise<number> {
  const bad = (problem?: string) => usageError(io, problem);
  const [command, arg, ...rest] = argv;
  const store = new AccessStore(redis);
  const usage = new UsageStore(redis, config.TIMEZONE);
  const needsArg = ["approve", "allow", "revoke", "allow-chat", "revoke-chat", "memory", "forget"];
  if (!command) return bad();
  if (needsArg.includes(command) && !arg) return bad(`${command} needs an argument`);
  if (rest.length > 0) return bad(`unexpected argument "${rest[0]!.slice(0, 40)}"`);
  switch (command) {
    case "list": {
      const { users, chats } = await store.grants();
      const pending = await store.pending();
      const line = (label: string, values: string[]) =>
        io.out(`${label}: ${values.length > 0 ? values.join(", ") : "(none)"}`);
      io.out(
        `ACCESS_POLICY: ${config.ACCESS_POLICY}${config.ACCESS_POLICY === "open" ? " (anyone may use the bot)" : ""}` +
          " (as .env and this command's environment set it; a bot started with other variables uses its own)",
      );
      line("admins (ADMIN_USERS)", config.ADMIN_USERS);
      line("allowed users (ALLOWED_USERS)", config.ALLOWED_USERS);
      line("allowed users (granted)", users);
      line("allowed chats (ALLOWED_CHATS)", config.ALLOWED_CHATS);
      line("allowed chats (granted)", chats);
      io.out(`pending pairing codes: ${pending.length === 0 ? "(none)" : ""}`);
      // Names are the strangers' own: one plain line each (a line break would forge a row).
      for (const p of pending)
        io.out(
          `  ${p.code}  ${p.platform}:${p.userId}  ${plainLine(p.userName, 64) || "?"}  expires ${localTime(p.expiresAt, config.TIMEZONE)}`,
        );
      const turned = await store.turnedAway();
      io.out(`pairing requests turned away: ${turned.length === 0 ? "(none in the last day)" : ""}`);
      for (const t of turned) {
        io.out(
          `  ${t.platform}: ${t.flooded} new strangers refused by the limit of ` +
            `${PAIRING_CODES_PER_PLATFORM_PER_HOUR} new codes an hour${t.flooded > 0 ? " (a flood of new accounts?)" : ""}, ` +
            `${t.limited} over the limit of ${PAIRING_CODES_PER_USER_PER_DAY} codes a day per person — ` +
            `since ${localTime(t.since, config.TIMEZONE)}`,
        );
      }
      return 0;
    }
    case "approve": {
      const pairing = await store.approve(arg!, "cli");
      if (!pairing) {
        // Approved before (here, by an admin's /approve or in the web console): said so; nothing is done again.
        const approved = await store.approvedCode(arg!);
        if (approved) {
          io.err(approvedAlreadyText("en", approved, config.TIMEZONE));
          return 1;
        }
        io.err(
          `No pending pairing code "${arg!.slice(0, 16)}" (mistyped, or expired: codes are valid for 1 hour). See: npm run access -- list`,
        );
        return 1;
      }
      const who = `${pairing.platform}:${pairing.userId}`;
      io.out(`approved ${plainLine(pairing.userName, 64) || "?"} (${who})`);
      try {
        await tell(
          config,
          pairing.platform as Platform,
          pairing.chatId,
          localize(pairing.locale ?? config.BOT_LOCALE, COMMAND_TEXT.youAreIn),
        );
        io.out("they were told they are in");
      } catch (error) {
        io.err(`could not tell them (${redact((error as Error).message)}); they can write to the bot now`);
      }
      return 0;
    }
    case "allow":
    case "revoke":
    case "allow-chat":
    case "revoke-chat": {
      const principal = parsePrincipal(arg!);
      if (!principal) {
        const topic = /^telegram:-?\d+\/\d+$/i.test(arg!.trim())
          ? " (a Telegram group is allowed as a whole, with all its topics: leave out /<topicId>)"
          : "";
        io.err(`"${arg!.slice(0, 40)}" is not platform:id (telegram:<id>, discord:<id> or line:<id>)${topic}`);
        return 2;
      }
      const chat = command.endsWith("-chat");
      const kind = principalKind(principal);
      if (!chat && kind === "group") {
        // Telegram user ids are positive, a negative id is a group or channel; a LINE group or room id starts with C or R.
        io.err(`${principal} is a ${platformName(principal)} group, not a user: use allow-chat / revoke-chat for it`);
        return 2;
      }
      if (command === "allow-chat" && kind === "person") {
        // A person's id as a chat would be their private chat, which chat grants never open (a DM needs a user grant).
        const groups = principal.startsWith("telegram:")
          ? "Telegram group ids are negative, e.g. telegram:-1001234567890"
          : "LINE group ids start with C, multi-person chats with R";
        io.err(`${principal} is a person, not a group (${groups}): to let them in, use allow ${principal}`);
        return 2;
      }
      const list = envListOf(config, principal, chat ? "chat" : "user");
      const through = `through ${list} in the environment (.env)`;
      if (command.startsWith("revoke")) {
        const removed = chat ? await store.revokeChat(principal) : await store.revokeUser(principal);
        if (list) {
          // The grant (if any) is gone; the env list still lets it in until it is edited and the bot restarted.
          if (removed) io.out(`revoked the grant of ${principal}`);
          io.err(
            `${principal} ${removed ? "still has" : "was not granted: it has"} access ${through}; ` +
              "remove it there and restart the bot",
          );
          return removed ? 0 : 2;
        }
        io.out(removed ? `revoked ${principal}` : `${principal} was not granted`);
        return removed ? 0 : 1;
      }
      if (list) {
        // No grant is written: it would add nothing now, and would silently keep the access after the entry is removed from .env.
        io.out(`${principal} already has access ${through}; no grant was written`);
        return 0;
      }
      const added = chat ? await store.allowChat(principal) : await store.allowUser(principal);
      io.out(added ? `allowed ${principal}` : `${principal} was allowed already`);
      return 0;
    }
    case "usage": {
      if (arg) {
        const principal = personOf(arg);
        if (!principal)
          return bad(`"${arg.slice(0, 40)}" is not platform:id (telegram:<id>, discord:<id> or console:<name>)`);
        const [platform, userId] = [
          principal.slice(0, principal.indexOf(":")),
          principal.slice(principal.indexOf(":") + 1),
        ];
        io.out(
          plain(
            formatUserUsage(
              config,
              "en",
              await usage.userTotals(platform, userId),
              !config.ADMIN_USERS.includes(principal),
            ),
          ),
        );
        return 0;
      }
      const [bot, top] = await Promise.all([usage.botTotals(), usage.topUsers(10)]);
      io.out(plain(formatAllUsage(config, "en", bot, top)));
      return 0;
    }
    case "memory":
    case "forget": {
      const principal = personOf(arg!);
      if (!principal)
        return bad(`"${arg!.slice(0, 40)}" is not platform:id (telegram:<id>, discord:<id> or console:<name>)`);
      if (principalKind(principal) === "group") {
        io.err(
          `${principal} is a ${platformName(principal)} group, not a person: a group's memory is shown and erased in the group (/memory, /forget)`,
        );
        return 2;
      }
      const [platform, userId] = [
        principal.slice(0, principal.indexOf(":")) as Platform,
        principal.slice(principal.indexOf(":") + 1),
      ];
      const memory = new MemoryStore(redis);
      const scope = { kind: "personal" as const, platform, userId };
      if (command === "forget") {
        const count = await memory.erase(scope);
        io.out(
          count === 0
            ? `${principal} has no memory`
            : `erased the memory of ${principal} (${englishCount(count, "file")})`,
        );
        return count === 0 ? 1 : 0;
      }
      const files = await memory.read(scope);
      if (files.length === 0) {
        io.out(`${principal} has no memory`);
        return 1;
      }
      io.out(
        `memory of ${principal} (${memoryKey(scope)}): ${englishCount(files.length, "file")}, ` +
          `${totalBytes(files)} of ${config.MEMORY_MAX_BYTES} bytes`,
      );
      for (const file of files) {
        io.out(`\n${file.path}  ${fileBytes(file)} bytes  updated ${localTime(file.updatedAt, config.TIMEZONE)}`);
        // The model's words: each line made plain (no terminal escapes), indented.
        for (const line of file.text.split("\n")) io.out(`  ${plainLine(line)}`);
      }
      return 0;
    }
    default:
      return bad();
  }
}

/**
 * A person named on the command line for `usage`, `memory` and `forget`: `telegram:<id>`,
 * `discord:<id>` (as {@link parsePrincipal} reads them), or the terminal chat's user
 * `console:<name>` (1-128 characters, no spaces or colons), who has usage and memory too.
 *
 * @returns `platform:id`, or undefined when `arg` is none of these.
 */
function personOf(arg: string): string | undefined {
  return /^console:[^\s:]{1,128}$/i.test(arg) ? `console:${arg.slice(8)}` : parsePrincipal(arg);
}

/** `Telegram`, `Discord` or `LINE`: the platform of a `platform:id`, as its users call it. */
function platformName(principal: string): string {
  const platform = principal.slice(0, principal.indexOf(":"));
  return platform === "line" ? "LINE" : platform.charAt(0).toUpperCase() + platform.slice(1);
}

/** Prints `problem` (when given) and the usage text; returns exit code 2. */
function usageError(io: CliIo, problem?: string): number {
  if (problem) io.err(problem);
  io.err(USAGE);
  return 2;
}

/** Markdown of the shared usage texts as terminal text. */
function plain(markdown: string): string {
  return markdown.replace(/\*\*(.+?)\*\*/g, "$1").replace(/`([^`\n]+)`/g, "$1");
}

/** Sends `text` to a user's DM through the platform's REST API (its token must be in `.env`). */
async function tell(config: Config, platform: Platform, chatId: string, text: string): Promise<void> {
  const variable = { telegram: "TELEGRAM_BOT_TOKEN", discord: "DISCORD_TOKEN", line: "LINE_CHANNEL_ACCESS_TOKEN" }[
    platform as "telegram" | "discord" | "line"
  ] as keyof Config | undefined;
  if (variable && !config[variable]) throw new Error(`${variable} is not set here`);
  const log = createLogger({ level: "silent" });
  const outbound = (await loadPlatform(platform)).createOutbound(config, log);
  await outbound.sendAnswer(dmTo(platform, chatId), text);
}

/**
 * `npm run access -- …argv` with the environment `env` (`.env` already read into it by the entry
 * point), writing to `io`.
 * @returns the exit code (0, 1 or 2, see above).
 * @throws what a command throws besides the failures it answers (e.g. Redis lost mid-command).
 */
export async function accessMain(argv: string[], env: NodeJS.ProcessEnv, io: CliIo): Promise<number> {
  if (argv.length === 0 || argv[0] === "--help" || argv[0] === "-h") return usageError(io);
  const unknown = unknownCommand(argv[0]!);
  if (unknown) return usageError(io, unknown);
  const config = loadCliConfig(env, io);
  if (!config) return 2;
  // The private redis-server of this folder is found (or started) as `npm run trace` finds it, so
  // grants made while the bot is stopped are there when it starts.
  return withCliRedis(redisAddress(config), (redis) => run(argv, config, redis, io), io);
}

if (isEntryPoint(import.meta.url)) await runAsProgram("access", accessMain);
