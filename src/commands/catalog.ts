/**
 * Every command of the bot, in menu order. Adding a command is one entry here; the adapters
 * expose whatever this list holds (see `command.ts`).
 */
import { envListOf, isAdmin, userPrincipal } from "../access/policy.js";
import { englishNoun, localize, type Localized } from "../i18n.js";
import { conversationOf } from "../queue/incoming.js";
import type { Command, CommandInvocation, CommandServices } from "./command.js";
import { formatHelp, type HelpCommand } from "./help.js";
import { forgetMemory, memoryListing, MEMORY_TEXT, scopeOfAsker } from "./memory.js";
import { PERMISSION_TEXT, permissionsListing, revokeByName } from "./permissions.js";
import { modelCommand, personaCommand, settingsCommand, type SettingsServices } from "./settings.js";
import { formatToolList } from "./tools-listing.js";
import { stopCommand } from "../stop/commands.js";
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
  approveUnknown: {
    "zh-TW": "找不到配對碼「{code}」（可能打錯或已過期，配對碼 1 小時內有效）。",
    en: "No pending pairing code “{code}” (mistyped, or expired: codes are valid for 1 hour).",
  },
  approved: { "zh-TW": "已核准 {name}（{who}）。", en: "Approved {name} ({who})." },
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
  notEnabled: {
    "zh-TW": "這裡沒有用 /enable 啟用過（可能是整個伺服器被允許，請用 npm run access -- list 查看）。",
    en: "This chat was not enabled with /enable (the whole server may be allowed: see npm run access -- list).",
  },
  compactionUnavailable: { "zh-TW": "這裡沒有對話壓縮功能。", en: "Conversation compaction is not available here." },
  contextSize: {
    "zh-TW": "對話大小：約 {tokens} tokens（超過 {limit} 時會自動壓縮）",
    en: "Conversation size: about {tokens} tokens (compacted automatically past {limit})",
  },
  contextSizeUnknown: {
    "zh-TW": "對話大小：還沒有紀錄（超過 {limit} tokens 時會自動壓縮）",
    en: "Conversation size: not recorded yet (compacted automatically past {limit} tokens)",
  },
  contextCounts: {
    "zh-TW": "已摘要 {summarized} 則訊息（壓縮 {compactions} 次），保留原文 {messages} 則。",
    en: "{summarized} {summarizedNoun} summarised ({compactions} {compactionsNoun}), {messages} kept verbatim.",
  },
  contextNoSummary: {
    "zh-TW": "還沒有摘要：目前保留全部 {messages} 則訊息的原文。",
    en: "No summary yet: all {messages} messages are kept verbatim.",
  },
  contextSummary: { "zh-TW": "目前的摘要：", en: "Current summary:" },
  contextPart: { "zh-TW": "摘要（第 {part}/{parts} 段）：", en: "Summary (part {part} of {parts}):" },
  contextMore: {
    "zh-TW": "（摘要還有 {rest} 段：傳送 /context {next} 看下一段）",
    en: "(The summary has {rest} more {restNoun}: send /context {next} for the next one)",
  },
  contextNoPart: { "zh-TW": "摘要只有 {parts} 段。", en: "The summary has only {parts} {partsNoun}." },
  compacted: {
    "zh-TW": "已壓縮對話：到目前為止摘要了 {summarized} 則訊息，最近 {kept} 則保留原文。新的摘要：",
    en: "Compacted: {summarized} messages summarised so far, the latest {kept} kept verbatim. The new summary:",
  },
  compactNothing: {
    "zh-TW": "目前還不需要壓縮：最近 {turns} 輪對話本來就會保留原文（現在有 {kept} 則訊息）。",
    en: "Nothing to compact yet: the latest {turns} turns are always kept verbatim (there are {kept} messages now).",
  },
  compactFailed: {
    "zh-TW": "這次壓縮沒有成功（AI 服務暫時無法使用），對話維持原樣，稍後會自動再試。",
    en: "The compaction did not succeed this time (the AI service is unavailable); the conversation stays as it is and it will be retried later.",
  },
  compactPending: {
    "zh-TW": "壓縮還在進行中，稍後傳送 /context 查看新的摘要。",
    en: "The compaction is still running; send /context in a moment to see the new summary.",
  },
} satisfies Record<string, Localized>;

/** Characters of the summary shown in one `/context` reply (well within Discord's 2000 and Telegram's 4096). */
export const CONTEXT_PART_CHARS = 1500;

/** `text` in parts of at most {@link CONTEXT_PART_CHARS} UTF-16 units, cut at a line break or space when one is near, never inside a surrogate pair. */
export function summaryParts(text: string): string[] {
  const parts: string[] = [];
  let rest = text;
  while (rest.length > CONTEXT_PART_CHARS) {
    let at = Math.max(rest.lastIndexOf("\n", CONTEXT_PART_CHARS), rest.lastIndexOf(" ", CONTEXT_PART_CHARS));
    if (at < CONTEXT_PART_CHARS / 2) at = CONTEXT_PART_CHARS;
    const code = rest.charCodeAt(at - 1);
    if (code >= 0xd800 && code <= 0xdbff) at -= 1;
    parts.push(rest.slice(0, at).trimEnd());
    rest = rest.slice(at).trimStart();
  }
  if (rest !== "") parts.push(rest);
  return parts;
}

/** `/context [part]`: the conversation's size against `COMPACT_AT_TOKENS`, what was summarised, and one part of the summary. */
async function contextReply(inv: CommandInvocation, services: CommandServices): Promise<string> {
  if (!services.compaction) return localize(inv.locale, COMMAND_TEXT.compactionUnavailable);
  const report = await services.compaction.context(conversationOf(inv));
  const limit = services.config.COMPACT_AT_TOKENS.toLocaleString("en-US");
  const lines = [
    report.tokens !== undefined
      ? localize(inv.locale, COMMAND_TEXT.contextSize, { tokens: report.tokens.toLocaleString("en-US"), limit })
      : localize(inv.locale, COMMAND_TEXT.contextSizeUnknown, { limit }),
  ];
  if (report.summary === undefined) {
    lines.push(localize(inv.locale, COMMAND_TEXT.contextNoSummary, { messages: report.messages }));
    return lines.join("\n");
  }
  lines.push(
    localize(inv.locale, COMMAND_TEXT.contextCounts, {
      summarized: report.summarized,
      summarizedNoun: englishNoun(report.summarized, "message"),
      compactions: report.compactions,
      compactionsNoun: englishNoun(report.compactions, "compaction"),
      messages: report.messages,
    }),
  );
  const parts = summaryParts(report.summary);
  const asked = Number.parseInt(inv.args.trim(), 10);
  const part = Number.isInteger(asked) && asked >= 1 ? asked : 1;
  if (part > parts.length)
    return [
      ...lines,
      localize(inv.locale, COMMAND_TEXT.contextNoPart, {
        parts: parts.length,
        partsNoun: englishNoun(parts.length, "part"),
      }),
    ].join("\n");
  lines.push(
    "",
    parts.length > 1
      ? localize(inv.locale, COMMAND_TEXT.contextPart, { part, parts: parts.length })
      : localize(inv.locale, COMMAND_TEXT.contextSummary),
    parts[part - 1]!,
  );
  if (part < parts.length)
    lines.push(
      "",
      localize(inv.locale, COMMAND_TEXT.contextMore, {
        rest: parts.length - part,
        restNoun: englishNoun(parts.length - part, "part"),
        next: part + 1,
      }),
    );
  return lines.join("\n");
}

/** `/compact`: compacts now (a worker runs it) and shows the new summary's first part. */
async function compactReply(inv: CommandInvocation, services: CommandServices): Promise<string> {
  if (!services.compaction) return localize(inv.locale, COMMAND_TEXT.compactionUnavailable);
  const result = await services.compaction.compactNow(conversationOf(inv), {
    platform: inv.platform,
    userId: inv.userId,
    chatId: inv.chatId,
  });
  switch (result.outcome) {
    case "compacted": {
      const parts = summaryParts(result.summary);
      const lines = [
        localize(inv.locale, COMMAND_TEXT.compacted, { summarized: result.summarized, kept: result.kept }),
        parts[0] ?? "",
      ];
      if (parts.length > 1)
        lines.push(
          "",
          localize(inv.locale, COMMAND_TEXT.contextMore, {
            rest: parts.length - 1,
            restNoun: englishNoun(parts.length - 1, "part"),
            next: 2,
          }),
        );
      return lines.join("\n");
    }
    case "nothing":
      return localize(inv.locale, COMMAND_TEXT.compactNothing, {
        turns: services.config.COMPACT_KEEP_TURNS,
        kept: result.kept,
      });
    case "failed":
      return localize(inv.locale, COMMAND_TEXT.compactFailed);
    default:
      return localize(inv.locale, COMMAND_TEXT.compactPending);
  }
}

const d = (zh: string, en: string): Localized => ({ "zh-TW": zh, en });

/**
 * The commands `/help` lists and "unknown command" names on `platform`: those of the platform,
 * admin commands only when `admin`, without Telegram's `/start` (it is `/help`). One list, so the
 * two never disagree.
 */
export function listedCommands(platform: string, admin: boolean): Command[] {
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
export const COMMANDS: readonly Command[] = [
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
    name: "stop",
    description: d("停止正在寫的回答", "Stop the answer being written"),
    access: "everyone",
    run: stopCommand,
  },
  {
    name: "reset",
    description: d("清除這個聊天的對話記憶", "Forget this chat's conversation"),
    access: "group-admin",
    async run(inv, services) {
      await services.resetChat(conversationOf(inv));
      return localize(inv.locale, inv.topicId ? COMMAND_TEXT.resetTopic : COMMAND_TEXT.reset);
    },
  },
  {
    name: "context",
    description: d("對話大小、已摘要的內容與目前的摘要", "This conversation's size and its summary"),
    access: "everyone",
    option: {
      name: "part",
      description: d("摘要的第幾段（較長的摘要分段顯示）", "Which part of a long summary"),
      required: false,
    },
    run: contextReply,
  },
  {
    name: "compact",
    description: d("現在就把較早的對話壓縮成摘要", "Summarise the older part of this conversation now"),
    access: "group-admin",
    run: compactReply,
  },
  {
    name: "settings",
    description: d(
      "這個聊天的設定：角色、模型、語言、串流、群組回覆",
      "This chat's settings: persona, model, language, streaming, group replies",
    ),
    access: "everyone",
    option: {
      name: "change",
      description: d(
        "直接修改，例如 language en、streaming off",
        "Change one directly, e.g. language en, streaming off",
      ),
      required: false,
    },
    run: (inv, services) => withSettings(inv, services, (s) => settingsCommand(inv, inv.args, s)),
  },
  {
    name: "persona",
    description: d("這個聊天的角色設定（不加文字則顯示）", "This chat's persona (shown when no text is given)"),
    access: "everyone",
    option: {
      name: "text",
      description: d("角色設定，最多 1000 字", "The persona, at most 1000 characters"),
      required: false,
    },
    run: (inv, services) => withSettings(inv, services, (s) => personaCommand(inv, inv.args, s)),
  },
  {
    name: "model",
    description: d("這個聊天使用的模型", "The model this chat uses"),
    access: "everyone",
    option: {
      name: "id",
      description: d("模型（MODELS 中的一個）", "A model (one of MODELS)"),
      required: false,
      choices: (services) => (services.config.MODELS.length > 1 ? services.config.MODELS.map((m) => m.id) : []),
    },
    run: (inv, services) => withSettings(inv, services, (s) => modelCommand(inv, inv.args, s)),
  },
  {
    name: "reminders",
    description: d(
      "列出你在這裡的提醒（Telegram、Discord 上可按按鈕取消）",
      "Your reminders here (cancel buttons on Telegram and Discord)",
    ),
    access: "everyone",
    async run(inv, services) {
      if (!services.reminders)
        return localize(inv.locale, { "zh-TW": "這裡沒有提醒功能。", en: "Reminders are not available here." });
      return services.reminders.listing(inv);
    },
  },
  {
    name: "tasks",
    description: d("你在這裡的排程任務（可暫停、繼續、取消）", "Your scheduled tasks here (pause, resume, cancel)"),
    access: "everyone",
    async run(inv, services) {
      if (!services.tasks)
        return localize(inv.locale, {
          "zh-TW": "這裡沒有排程任務功能。",
          en: "Scheduled tasks are not available here.",
        });
      // A group's admins (and bot admins) see every task of the group, with cancel buttons (issue 39).
      return services.tasks.listing({
        ...conversationOf(inv),
        userId: inv.userId,
        locale: inv.locale,
        chatKind: inv.chatKind,
        admin: isAdmin(services.config, inv),
        isGroupAdmin: inv.isGroupAdmin,
      });
    },
  },
  {
    name: "permissions",
    description: d(
      "你在這裡「一律允許」的工具；加上工具名稱即可撤銷",
      "Tools you always allow here; add a tool name to revoke it",
    ),
    access: "everyone",
    option: {
      name: "tool",
      description: d("撤銷這個工具的一律允許（工具名稱）", "Revoke the always-allow of this tool (its name)"),
      required: false,
    },
    async run(inv, services) {
      if (!services.grants) return localize(inv.locale, PERMISSION_TEXT.unavailable);
      const asker = { ...conversationOf(inv), userId: inv.userId, locale: inv.locale };
      const tool = inv.args.trim().split(/\s+/)[0] ?? "";
      if (tool !== "") return revokeByName(asker, tool, services.grants);
      return permissionsListing({ ...asker, timezone: services.config.TIMEZONE }, services.grants);
    },
  },
  {
    name: "memory",
    description: d(
      "我記得的事（私訊：你的；群組：群組的），可逐一刪除",
      "What I remember here (yours in DMs, the group's in groups), with delete buttons",
    ),
    access: "everyone",
    async run(inv, services) {
      if (!services.memory) return localize(inv.locale, MEMORY_TEXT.unavailable);
      const { config } = services;
      // In a group the delete buttons are for those who may delete: its administrators and the bot's admins.
      const mayDelete =
        inv.chatKind !== "group" || isAdmin(config, inv) || (await inv.isGroupAdmin?.().catch(() => false)) === true;
      return memoryListing({ ...inv, timezone: config.TIMEZONE }, services.memory, {
        maxBytes: config.MEMORY_MAX_BYTES,
        off: config.MEMORY !== "on",
        mayDelete,
      });
    },
  },
  {
    name: "forget",
    description: d(
      "清除記憶（私訊：你的個人記憶；群組：群組記憶，限管理員）",
      "Erase memory (DMs: yours; groups: the group's, admins only)",
    ),
    access: "group-admin",
    async run(inv, services) {
      if (!services.memory) return localize(inv.locale, MEMORY_TEXT.unavailable);
      const reply = await forgetMemory({ ...inv, timezone: services.config.TIMEZONE }, services.memory);
      services.log.info({ scope: scopeOfAsker(inv), by: userPrincipal(inv) }, "memory erased (/forget)");
      return reply;
    },
  },
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
    async run(inv, services) {
      const { config, gate } = services;
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
      const pairing = await services.gate.access.approve(code);
      if (!pairing) return localize(inv.locale, COMMAND_TEXT.approveUnknown, { code: code.slice(0, 16) });
      const who = userPrincipal(pairing);
      services.log.info({ who, by: userPrincipal(inv) }, "pairing approved");
      try {
        await services.notify(
          pairing.platform,
          pairing.chatId,
          pairing.userId,
          localize(services.config.BOT_LOCALE, COMMAND_TEXT.youAreIn),
        );
      } catch (error) {
        return localize(inv.locale, COMMAND_TEXT.approvedNotifyFailed, {
          name: pairing.userName,
          who,
          reason: (error as Error).message,
        });
      }
      return localize(inv.locale, COMMAND_TEXT.approved, { name: pairing.userName, who });
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
      const list = envListOf(services.config, principal);
      if (list) return localize(inv.locale, COMMAND_TEXT.disableFromEnv, { list });
      const removed = await services.gate.access.revokeChat(principal);
      services.log.info({ chat: principal, by: userPrincipal(inv) }, "chat disabled");
      return localize(inv.locale, removed ? COMMAND_TEXT.disabled : COMMAND_TEXT.notEnabled);
    },
  },
];

/** Runs a settings command with the settings store, or says settings are not available here. */
function withSettings(
  inv: CommandInvocation,
  services: CommandServices,
  run: (s: SettingsServices) => ReturnType<Command["run"]>,
): ReturnType<Command["run"]> {
  if (!services.settings)
    return localize(inv.locale, { "zh-TW": "這裡無法使用設定。", en: "Settings are not available here." });
  return run({ config: services.config, settings: services.settings });
}

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

/** The command named `name` (case-insensitive) on `platform`, if any. */
export function findCommand(name: string, platform?: string): Command | undefined {
  const wanted = name.toLowerCase();
  return COMMANDS.find(
    (c) => c.name === wanted && (!platform || !c.platforms || c.platforms.includes(platform as never)),
  );
}

/** The commands exposed on `platform`. */
export function commandsFor(platform: string): Command[] {
  return COMMANDS.filter((c) => !c.platforms || c.platforms.includes(platform as never));
}
