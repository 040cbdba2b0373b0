/**
 * Every command of the bot, in menu order: the core's here (`/start`, `/help`, `/tools`, `/reset`,
 * then `/usage` and the admins' `/approve`, `/enable`, `/disable`), each feature's in its own
 * `feature.ts` (`Feature.commands`, `src/feature.ts`). The adapters expose whatever
 * {@link allCommands} holds (see `command.ts`).
 */
import { DateTime } from "luxon";
import { envListOf, isAdmin, userPrincipal } from "../access/policy.js";
import type { ApprovedCode } from "../access/store.js";
import { markdownLiteral, plainLine } from "../plain-text.js";
import { FEATURES } from "../features.js";
import { localize, type Locale, type Localized } from "../i18n.js";
import { conversationOf } from "../queue/incoming.js";
import type { Command, CommandInvocation, CommandServices } from "./command.js";
import { formatHelp, type HelpCommand } from "./help.js";
import { formatToolList } from "./tools-listing.js";
import { formatAllUsage, formatUserUsage } from "./usage-report.js";

/** Words of the commands below. */
export const COMMAND_TEXT = {
  reset: {
    "zh-TW": "好的，我已經忘掉這個聊天之前的對話了。",
    en: "Done: I have forgotten this chat's earlier conversation.",
  },
  resetTopic: {
    "zh-TW": "好的，我已經忘掉這個話題之前的對話了（其他話題不受影響）。",
    en: "Done: I have forgotten this topic's earlier conversation (other topics are not affected).",
  },
  approveUsage: { "zh-TW": "用法：/approve <配對碼>", en: "Usage: /approve <CODE>" },
  approveDmOnly: {
    "zh-TW": "請在私訊中傳送 /approve，以免配對碼外流。",
    en: "Send /approve in a DM with me, so the code stays private.",
  },
  usageDmOnly: {
    "zh-TW": "用量是個人資訊，請在私訊中傳送 /usage 給我查看。",
    en: "Your usage is personal: send /usage in a DM with me to see it.",
  },
  approveUnknown: {
    "zh-TW": "找不到配對碼「{code}」（可能打錯或已過期，配對碼 1 小時內有效）。",
    en: "No pending pairing code “{code}” (mistyped, or expired: codes are valid for 1 hour).",
  },
  approved: { "zh-TW": "已核准 {name}（{who}）。", en: "Approved {name} ({who})." },
  approvedAlready: {
    "zh-TW": "配對碼「{code}」已經核准過了：{name}（{who}）已於 {when} 由 {by} 核准。",
    en: "Pairing code “{code}” was approved already: {name} ({who}), by {by} on {when}.",
  },
  approvedByCli: { "zh-TW": "命令列（npm run access）", en: "the command line (npm run access)" },
  approvedByConsole: { "zh-TW": "網頁管理介面", en: "the web console" },
  approvedNotifyFailed: {
    "zh-TW": "已核准 {name}（{who}），但無法通知對方：{reason}",
    en: "Approved {name} ({who}), but could not tell them: {reason}",
  },
  youAreIn: {
    "zh-TW": "你已獲得使用許可，現在可以開始跟我對話了！傳送 /help 看看我能做什麼。",
    en: "You're in! You can talk to me now. Send /help to see what I can do.",
  },
  groupOnly: { "zh-TW": "這個指令要在群組裡使用。", en: "Use this command in a group." },
  enabled: {
    "zh-TW": "已在這裡啟用機器人：每位成員都可以提及我來使用。",
    en: "Enabled here: every member can now talk to me by mentioning me.",
  },
  alreadyEnabled: { "zh-TW": "這裡已經啟用了。", en: "This chat is enabled already." },
  disabled: { "zh-TW": "已在這裡停用機器人。", en: "Disabled here." },
  disableFromEnv: {
    "zh-TW": "這個聊天列在設定 {list} 中，請從 .env 移除後重新啟動。",
    en: "This chat is listed in {list}; remove it from .env and restart.",
  },
  disabledStillEnv: {
    "zh-TW": "已移除這裡的 /enable 啟用，但這個聊天仍列在設定 {list} 中，機器人仍會回應：請從 .env 移除後重新啟動。",
    en: "Removed this chat's /enable, but it is still listed in {list}, so the bot still answers here: remove it from .env and restart.",
  },
  notEnabled: {
    "zh-TW": "這裡沒有用 /enable 啟用過（可能是整個伺服器被允許，請用 npm run access -- list 查看）。",
    en: "This chat was not enabled with /enable (the whole server may be allowed: see npm run access -- list).",
  },
} satisfies Record<string, Localized>;

const d = (zh: string, en: string): Localized => ({ "zh-TW": zh, en });

/**
 * The commands `/help` lists and "unknown command" names on `platform`: those of the platform,
 * admin commands only when `admin`, without Telegram's `/start` (it is `/help`). One list, so the
 * two never disagree.
 */
export function listedCommands(platform: string, admin: boolean): CommandInfo[] {
  return commandsFor(platform).filter((c) => (admin || c.access !== "admin") && c.name !== "start");
}

/** The commands a person may use in this chat, for `/help` (admin commands only for admins). */
function helpCommands(invocation: CommandInvocation, services: CommandServices): HelpCommand[] {
  return listedCommands(invocation.platform, isAdmin(services.config, invocation)).map((c) => ({
    name: c.name,
    description: localize(invocation.locale, c.description),
    ...(c.option ? { arg: `${c.option.required ? "<" : "["}${c.option.name}${c.option.required ? ">" : "]"}` } : {}),
  }));
}

function help(invocation: CommandInvocation, services: CommandServices): string {
  return formatHelp(invocation.locale, {
    toolbox: services.toolboxFor(invocation),
    commands: helpCommands(invocation, services),
    groupHint: invocation.mention,
  });
}

/** The catalogue. */
/** The core's commands listed before the features' (menu order). */
const FIRST: readonly Command[] = [
  {
    name: "start",
    description: d("開始使用與範例", "Get started, with examples"),
    access: "everyone",
    platforms: ["telegram"],
    run: help,
  },
  { name: "help", description: d("我能做什麼", "What I can do"), access: "everyone", run: help },
  {
    name: "tools",
    description: d("列出可用的工具（可加分類）", "List the tools (optionally one tag)"),
    access: "everyone",
    option: {
      name: "tag",
      description: d("只列出這個分類的工具", "Only the tools with this tag"),
      required: false,
      choices: (services) =>
        [
          ...new Set([
            ...services.toolboxFor({ platform: "discord", chatKind: "dm" }).tags(),
            ...services.toolboxFor({ platform: "discord", chatKind: "group" }).tags(),
          ]),
        ].sort(),
    },
    run: (inv, services) => formatToolList(services.toolboxFor(inv), inv.locale, inv.args.split(/\s+/)[0] || undefined),
  },
  {
    name: "reset",
    description: d("清除這個聊天的對話記憶", "Forget this chat's conversation"),
    access: "group-admin",
    async run(inv, services) {
      // What the features closed with it (a pending confirmation on LINE) follows, one line each.
      const closed = await services.resetConversation(conversationOf(inv));
      return [
        localize(inv.locale, inv.topicId ? COMMAND_TEXT.resetTopic : COMMAND_TEXT.reset),
        ...closed.map((line) => localize(inv.locale, line)),
      ].join("\n");
    },
  },
];

/** The core's commands listed after the features' (usage and the admins' commands). */
const LAST: readonly Command[] = [
  {
    name: "usage",
    description: d("我的用量與剩餘額度", "My token usage and budget left"),
    access: "everyone",
    option: {
      name: "scope",
      description: d("all：所有人（限管理員）", "all: everyone (admins only)"),
      required: false,
      choices: () => ["all"],
    },
    /**
     * The asker's usage (`all`: the whole bot's, admins only). In a group the answer would be seen by
     * everyone, so there it only says to ask in a private chat (as `/approve` does), except on
     * Discord, whose command answers are ephemeral (seen by the asker only).
     */
    async run(inv, services) {
      const { config, gate } = services;
      if (inv.chatKind === "group" && inv.platform !== "discord") return localize(inv.locale, COMMAND_TEXT.usageDmOnly);
      const admin = isAdmin(config, inv);
      if (inv.args.trim().toLowerCase() === "all") {
        if (!admin) return localize(inv.locale, ADMIN_ONLY);
        const [bot, top] = await Promise.all([gate.usage.botTotals(), gate.usage.topUsers(10)]);
        return formatAllUsage(config, inv.locale, bot, top);
      }
      const report = formatUserUsage(config, inv.locale, await gate.usage.userTotals(inv.platform, inv.userId), !admin);
      if (inv.platform !== "line") return report;
      // LINE's push messages count against the channel's monthly quota (answers by reply token are free).
      const pushes = await gate.usage.pushesThisMonth("line");
      const limit = config.LINE_PUSH_MONTHLY_LIMIT;
      return `${report}\n\n${localize(
        inv.locale,
        {
          "zh-TW": "LINE 推播訊息（本月，整個機器人）：{n}{limit}",
          en: "LINE push messages (this month, the whole bot): {n}{limit}",
        },
        { n: pushes, limit: limit ? ` / ${limit}` : "" },
      )}`;
    },
  },
  {
    name: "approve",
    description: d("核准配對碼（管理員）", "Approve a pairing code (admins)"),
    access: "admin",
    option: {
      name: "code",
      description: d("陌生人收到的 8 字元配對碼", "The 8-character code the stranger was given"),
      required: true,
    },
    async run(inv, services) {
      const code = inv.args.trim();
      if (inv.chatKind !== "dm") return localize(inv.locale, COMMAND_TEXT.approveDmOnly);
      if (code === "") return localize(inv.locale, COMMAND_TEXT.approveUsage);
      const pairing = await services.gate.access.approve(code, userPrincipal(inv), inv.userName);
      if (!pairing) {
        // Approved before (by this admin or another, here or elsewhere): said so, with whom, by whom and when.
        const approved = await services.gate.access.approvedCode(code);
        if (approved) return approvedAlreadyText(inv.locale, approved, services.config.TIMEZONE, markdownLiteral);
        return localize(inv.locale, COMMAND_TEXT.approveUnknown, { code: markdownLiteral(code.slice(0, 16)) });
      }
      const who = userPrincipal(pairing);
      services.log.info({ who, by: userPrincipal(inv) }, "pairing approved");
      try {
        await services.notify(
          pairing.platform,
          pairing.chatId,
          pairing.userId,
          localize(pairing.locale ?? services.config.BOT_LOCALE, COMMAND_TEXT.youAreIn),
        );
      } catch (error) {
        return localize(inv.locale, COMMAND_TEXT.approvedNotifyFailed, {
          name: markdownLiteral(pairing.userName),
          who,
          reason: (error as Error).message,
        });
      }
      return localize(inv.locale, COMMAND_TEXT.approved, { name: markdownLiteral(pairing.userName), who });
    },
  },
  {
    name: "enable",
    description: d("在這個群組啟用機器人（管理員）", "Enable the bot in this group (admins)"),
    access: "admin",
    async run(inv, services) {
      if (inv.chatKind !== "group") return localize(inv.locale, COMMAND_TEXT.groupOnly);
      const added = await services.gate.access.allowChat(`${inv.platform}:${inv.chatId}`);
      services.log.info({ chat: `${inv.platform}:${inv.chatId}`, by: userPrincipal(inv) }, "chat enabled");
      return localize(inv.locale, added ? COMMAND_TEXT.enabled : COMMAND_TEXT.alreadyEnabled);
    },
  },
  {
    name: "disable",
    description: d("在這個群組停用機器人（管理員）", "Disable the bot in this group (admins)"),
    access: "admin",
    async run(inv, services) {
      if (inv.chatKind !== "group") return localize(inv.locale, COMMAND_TEXT.groupOnly);
      const principal = `${inv.platform}:${inv.chatId}`;
      // The grant (if any) is removed even when ALLOWED_CHATS lists the chat, which is then said.
      const removed = await services.gate.access.revokeChat(principal);
      const list = envListOf(services.config, principal, "chat");
      if (removed) services.log.info({ chat: principal, by: userPrincipal(inv) }, "chat disabled");
      if (list)
        return localize(inv.locale, removed ? COMMAND_TEXT.disabledStillEnv : COMMAND_TEXT.disableFromEnv, { list });
      return localize(inv.locale, removed ? COMMAND_TEXT.disabled : COMMAND_TEXT.notEnabled);
    },
  },
];

/** The short refusal of an admin command to anyone else. */
export const ADMIN_ONLY: Localized = {
  "zh-TW": "抱歉，只有機器人管理員可以使用這個指令。",
  en: "Sorry, only the bot's admins may use this command.",
};
/** The short refusal of a group-admin command to a member. */
export const GROUP_ADMIN_ONLY: Localized = {
  "zh-TW": "抱歉，在群組裡只有群組管理員可以使用這個指令。",
  en: "Sorry, in a group only its administrators may use this command.",
};

/** A command as menus and `/help` see it: everything but its handler (a feature's handler also takes the feature's state). */
export type CommandInfo = Omit<Command, "run">;

/** The core's commands, with their handlers, by name (the runner runs them). */
export const CORE_COMMANDS: ReadonlyMap<string, Command> = new Map([...FIRST, ...LAST].map((c) => [c.name, c]));

let catalogue: readonly CommandInfo[] | undefined;

/**
 * Every command, in menu order: the core's first ones, each feature's in the order of `FEATURES`
 * (`src/features.ts`), then usage and the admins' commands. Built on first use, so that the list
 * of features is read only once every module has loaded.
 */
export function allCommands(): readonly CommandInfo[] {
  return (catalogue ??= [...FIRST, ...FEATURES.flatMap((f) => f.commands ?? []), ...LAST]);
}

/** The command named `name` (case-insensitive) on `platform`, if any. */
export function findCommand(name: string, platform?: string): CommandInfo | undefined {
  const wanted = name.toLowerCase();
  return allCommands().find(
    (c) => c.name === wanted && (!platform || !c.platforms || c.platforms.includes(platform as never)),
  );
}

/** The commands exposed on `platform`. */
export function commandsFor(platform: string): CommandInfo[] {
  return allCommands().filter((c) => !c.platforms || c.platforms.includes(platform as never));
}

/**
 * The answer to approving a code that was approved already (`AccessStore.approvedCode`): the code,
 * whom it let in, who approved it (an admin's name and `platform:id`, the command line, the web
 * console) and when, in `timezone` (`yyyy-MM-dd HH:mm`). Names are written as one plain line each.
 *
 * @param literal - how a name is written into the text: as it is (default; a terminal), or
 *   `markdownLiteral` for a chat reply, which is shown as Markdown (a name such as `**x**` is then
 *   shown as typed, not bold).
 */
export function approvedAlreadyText(
  locale: Locale,
  approved: ApprovedCode,
  timezone: string,
  literal: (text: string) => string = (text) => text,
): string {
  const by =
    approved.by === "cli"
      ? localize(locale, COMMAND_TEXT.approvedByCli)
      : approved.by === "console"
        ? localize(locale, COMMAND_TEXT.approvedByConsole)
        : approved.byName
          ? `${literal(plainLine(approved.byName, 64))} (${approved.by})`
          : approved.by;
  return localize(locale, COMMAND_TEXT.approvedAlready, {
    code: approved.code,
    name: literal(plainLine(approved.userName, 64)) || "?",
    who: `${approved.platform}:${approved.userId}`,
    by,
    when: DateTime.fromMillis(approved.at, { zone: timezone }).toFormat("yyyy-MM-dd HH:mm"),
  });
}
