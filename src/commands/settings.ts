/**
 * `/settings`, `/persona` and `/model`: a conversation's settings (`src/settings/store.ts`) shown
 * to everyone (Markdown, as every command's reply: the persona is a literal in it, shown as it was
 * written), changed by the people allowed to — in a private chat its user, in a group its
 * administrators (as for `/reset`: Telegram creator or administrator, Discord Manage Messages in
 * the channel) and the bot's admins. Platform-neutral: the adapters pass what was typed or pressed
 * and render the reply (text and buttons).
 *
 * A settings button carries `st:<setting>:<value>` (`p:-` clears the persona, `m:<model handle>`,
 * `l:zh-TW|en`, `s:on|off`, `r:mention|all`, `v:off|when-spoken|always`); a press is checked again like a typed change (who
 * pressed, in which conversation, whether the value is offered there), so a forged or replayed
 * press by someone who may not change the settings changes nothing.
 */
import { createHash } from "node:crypto";
import { isAdmin } from "../access/policy.js";
import { modelLabel, type Config, type Locale } from "../config.js";
import { localize, type Localized } from "../i18n.js";
import { markdownLiteral, plainLine } from "../plain-text.js";
import { conversationOf, type ConversationRef, type Platform } from "../queue/incoming.js";
import {
  cleanPersona,
  PERSONA_MAX,
  VOICE_REPLIES,
  type SettingName,
  type Settings,
  type SettingsStore,
  type VoiceReplies,
} from "../settings/store.js";
import type { CommandReply } from "./command.js";

/** Words of the settings commands and buttons. */
export const SETTINGS_TEXT = {
  titleChat: { "zh-TW": "這個聊天的設定：", en: "Settings of this chat:" },
  titleTopic: {
    "zh-TW": "這個話題的設定（沒有另外設定的項目沿用群組的設定）：",
    en: "Settings of this topic (what it does not set itself comes from the group):",
  },
  persona: { "zh-TW": "• 角色設定：{value}", en: "• Persona: {value}" },
  personaNone: { "zh-TW": "（無）", en: "(none)" },
  model: { "zh-TW": "• 模型：{value}", en: "• Model: {value}" },
  language: { "zh-TW": "• 語言：{value}", en: "• Language: {value}" },
  streaming: { "zh-TW": "• 邊寫邊顯示回答：{value}", en: "• Streaming answers: {value}" },
  replies: { "zh-TW": "• 群組裡回覆：{value}", en: "• Replies in this group: {value}" },
  voice: { "zh-TW": "• 語音回覆：{value}", en: "• Voice replies: {value}" },
  voiceOff: { "zh-TW": "關", en: "off" },
  "voiceWhen-spoken": { "zh-TW": "回覆語音訊息時", en: "to voice messages" },
  voiceAlways: { "zh-TW": "每則回答", en: "every answer" },
  voiceSet: {
    "zh-TW": "好的，語音回覆：{value}。文字回答照常送出，在語音之後。",
    en: "Done: voice replies {value}. The text answer still comes, after the voice.",
  },
  voiceUnavailable: {
    "zh-TW": "這個機器人沒有設定語音合成服務（TTS_BASE_URL），無法語音回覆。",
    en: "This bot has no speech service set up (TTS_BASE_URL), so it cannot reply with voice.",
  },
  buttonVoice: { "zh-TW": "語音回覆：{value}", en: "Voice replies: {value}" },
  voiceNotHere: { "zh-TW": "LINE 上無法使用（只回文字）", en: "not on LINE (text only)" },
  voiceNotOnLine: {
    "zh-TW":
      "LINE 的語音訊息必須放在公開的 HTTPS 網址讓 LINE 下載，這個機器人沒有設定（LINE_PUBLIC_URL），所以在 LINE 上只用文字回答。",
    en:
      "LINE audio messages must be served from a public HTTPS address for LINE to fetch, which this bot " +
      "does not provide (LINE_PUBLIC_URL is not set), so on LINE it answers in text only.",
  },
  on: { "zh-TW": "開", en: "on" },
  off: { "zh-TW": "關", en: "off" },
  mention: { "zh-TW": "只回覆提及我、回覆我的訊息和指令", en: "mentions, replies to me and commands only" },
  all: { "zh-TW": "每一則訊息", en: "every message" },
  allWarning: {
    "zh-TW": "⚠️「每一則訊息」會讓我回答群組裡的每則文字訊息，用量（費用）會大增；速率限制與額度照常適用。",
    en: "⚠️ “Every message” makes me answer every text message in this group, which uses far more tokens (cost); rate limits and budgets still apply.",
  },
  readOnly: {
    "zh-TW": "只有群組管理員和機器人管理員可以修改這些設定。",
    en: "Only the group's administrators and the bot's admins can change these settings.",
  },
  consoleHint: {
    "zh-TW":
      "修改：/settings <項目> <值>，例如 /settings language en、/settings streaming off、/settings voice always；" +
      "角色設定用 /persona <文字>，清除用 /settings persona clear；模型用 /model <id>。",
    en:
      "To change: /settings <name> <value>, e.g. /settings language en, /settings streaming off, /settings voice always; " +
      "the persona with /persona <text>, cleared with /settings persona clear; the model with " +
      "/model <id>.",
  },
  personaHint: {
    "zh-TW": "設定角色：/persona <文字>（最多 {max} 字），例如 /persona 你是親切的國文老師，用詞簡單。",
    en: "Set one with /persona <text> (at most {max} characters), e.g. /persona You are a friendly tutor who explains simply.",
  },
  personaShow: { "zh-TW": "目前的角色設定：\n{persona}", en: "The persona here:\n{persona}" },
  personaNoneHere: { "zh-TW": "這裡沒有角色設定。", en: "There is no persona here." },
  personaSet: {
    "zh-TW": "好的，從下一則訊息起我會照這個角色設定回答（不會改變確認與權限等規則）。",
    en: "Done: from the next message I follow this persona (it does not change my rules, such as confirmations and permissions).",
  },
  personaCleared: { "zh-TW": "已清除角色設定。", en: "The persona is cleared." },
  personaTooLong: {
    "zh-TW": "角色設定太長了（{length} 字，上限 {max} 字），請縮短一點。",
    en: "That persona is too long ({length} characters, at most {max}). Please shorten it.",
  },
  modelShow: { "zh-TW": "目前的模型：{model}\n可選：{list}", en: "The model here: {model}\nAvailable: {list}" },
  modelOnlyOne: { "zh-TW": "這個機器人只提供一個模型：{model}。", en: "This bot offers one model only: {model}." },
  modelSet: { "zh-TW": "好的，從下一則訊息起使用 {model}。", en: "Done: from the next message I use {model}." },
  modelUnknown: {
    "zh-TW": "沒有「{model}」這個模型可選。可選：{list}",
    en: "“{model}” is not one of the models offered. Available: {list}",
  },
  languageSet: {
    "zh-TW": "好的，之後我的訊息都用中文（臺灣）。",
    en: "Done: my own messages are in English from now on.",
  },
  streamingSet: { "zh-TW": "好的，邊寫邊顯示回答：{value}。", en: "Done: streaming answers {value}." },
  streamingUnavailable: {
    "zh-TW": "這個機器人沒有開啟邊寫邊顯示（STREAMING=off）。",
    en: "Streaming is off for this whole bot (STREAMING=off).",
  },
  streamingNotHere: {
    "zh-TW": "LINE 的訊息不能修改，回答都是寫完後一次送出，所以這裡沒有邊寫邊顯示。",
    en: "LINE messages cannot be edited: every answer is sent whole, so there is no streaming here.",
  },
  repliesSet: {
    "zh-TW": "好的，在這個群組裡我只回覆提及我、回覆我的訊息和指令。",
    en: "Done: in this group I answer mentions, replies to me and commands only.",
  },
  repliesAllSet: {
    "zh-TW": "好的，我會回答這個群組（或話題）裡的每一則文字訊息。用量會大增；速率限制與額度照常適用。",
    en: "Done: I answer every text message in this group (or topic). This uses far more tokens; rate limits and budgets still apply.",
  },
  repliesGroupOnly: { "zh-TW": "這個設定只適用於群組。", en: "This setting is for groups only." },
  privacyMode: {
    "zh-TW":
      "我的 Telegram 隱私模式開著，看不到沒有提及我的訊息。請擁有者在 @BotFather 用 /setprivacy 選 Disable，再把我移出群組後重新加入。",
    en:
      "My Telegram privacy mode is on, so I can't see messages that don't mention me. Owner: " +
      "@BotFather → /setprivacy → Disable, then re-add me to this group.",
  },
  notAllowed: {
    "zh-TW": "抱歉，在群組裡只有群組管理員和機器人管理員可以修改設定。",
    en: "Sorry, in a group only its administrators and the bot's admins can change the settings.",
  },
  valueUnknown: {
    "zh-TW": "「{value}」不是{setting}的選項。可用：{values}，例如 /settings {name} {example}。",
    en: "“{value}” is not an option for {setting}. Available: {values}, e.g. /settings {name} {example}.",
  },
  valueMissing: {
    "zh-TW": "請寫出{setting}的選項：{values}，例如 /settings {name} {example}。",
    en: "Say which option for {setting}: {values}, e.g. /settings {name} {example}.",
  },
  unknownSetting: {
    "zh-TW": "沒有「{name}」這個設定。可用：persona、model、language、streaming、replies、voice。",
    en: "There is no setting “{name}”. Settings: persona, model, language, streaming, replies, voice.",
  },
  gone: {
    "zh-TW": "這個選項已經不能用了，請再傳一次 /settings。",
    en: "This option is no longer available; send /settings again.",
  },
  changed: { "zh-TW": "已更新。", en: "Updated." },
  buttonPersonaClear: { "zh-TW": "🗑 清除角色設定", en: "🗑 Clear the persona" },
  buttonModel: { "zh-TW": "模型：{model}", en: "Model: {model}" },
  buttonLanguage: { "zh-TW": "語言：中文（臺灣）", en: "Language: English" },
  buttonStreaming: { "zh-TW": "邊寫邊顯示：{value}", en: "Streaming: {value}" },
  buttonReplies: { "zh-TW": "群組裡回覆：{value}", en: "Replies in the group: {value}" },
} satisfies Record<string, Localized>;

const LANGUAGE_NAMES: Record<Locale, string> = { "zh-TW": "中文（臺灣）", en: "English" };

/**
 * The settings whose value is one of a few words: what a refusal of another value names (the
 * setting in words), lists (the values a change takes) and shows as an example of a change.
 */
const CHOICES = {
  language: { setting: { "zh-TW": "語言", en: "the language" }, values: ["zh-TW", "en"], example: "en" },
  streaming: { setting: { "zh-TW": "邊寫邊顯示", en: "streaming" }, values: ["on", "off"], example: "off" },
  replies: {
    setting: { "zh-TW": "群組裡回覆", en: "replies in a group" },
    values: ["mention", "all"],
    example: "all",
  },
  voice: {
    setting: { "zh-TW": "語音回覆", en: "voice replies" },
    values: [...VOICE_REPLIES],
    example: "when-spoken",
  },
} satisfies Partial<Record<SettingName, { setting: Localized; values: string[]; example: string }>>;

/**
 * What someone typed (or a forged button carried), quoted back in a refusal: one plain line of at
 * most `max` characters (code points), a lone UTF-16 surrogate as U+FFFD, so the answer is one a
 * platform accepts (a lone surrogate is refused by JSON parsers of the platforms' APIs).
 */
function quoted(text: string, max: number): string {
  return plainLine(text.toWellFormed(), max);
}

/**
 * The refusal of a value that setting `name` does not take (none given, or `value`): which values
 * it takes, and how to type a change, in `locale`; as the refusal of an unknown model says the models offered.
 */
function valueRefusal(locale: Locale, name: keyof typeof CHOICES, value: string): string {
  const { setting, values, example } = CHOICES[name];
  return localize(locale, value === "" ? SETTINGS_TEXT.valueMissing : SETTINGS_TEXT.valueUnknown, {
    value: quoted(value, 32),
    setting: localize(locale, setting),
    values: values.join(locale === "zh-TW" ? "、" : ", "),
    name,
    example,
  });
}

/** Who asks to see or change the settings, and where (a command's invocation, or a button's press). */
export interface SettingsAsker extends ConversationRef {
  platform: Platform;
  chatKind: "dm" | "group";
  userId: string;
  /** The language of the reply. */
  locale: Locale;
  /** Whether the asker administers this group (as for `/reset`); asked only in groups. */
  isGroupAdmin?: (() => Promise<boolean>) | undefined;
  /**
   * Whether the bot receives the group's messages that do not address it (Telegram: `getMe`'s
   * `can_read_all_group_messages`, false while privacy mode is on). Absent: it does (Discord with
   * the Message Content intent, the console).
   */
  readsAllGroupMessages?: (() => Promise<boolean>) | undefined;
}

/** What the settings commands use. */
export interface SettingsServices {
  config: Config;
  settings: SettingsStore;
}

/** True when `data` is a settings button's data (`st:…`), so the press is handed here. */
export function isSettingsButton(data: string): boolean {
  return data.startsWith("st:");
}

/** 12 characters of base64url SHA-256 of a model id: the button's handle on it (ids may be longer than a button's data allows). */
function modelHandle(model: string): string {
  return createHash("sha256").update(model).digest("base64url").slice(0, 12);
}

/** The one-letter code of each setting in button data. */
const CODES: Record<string, SettingName> = {
  p: "persona",
  m: "model",
  l: "language",
  s: "streaming",
  r: "replies",
  v: "voice",
};

/**
 * Whether voice replies are offered on the asker's platform: on LINE only when `LINE_PUBLIC_URL`
 * is set, since LINE fetches an audio message from a public HTTPS address (`originalContentUrl`)
 * that the bot's LINE webhook server then serves (see docs/voice.md).
 */
function voiceOffered(asker: Pick<SettingsAsker, "platform">, config: Pick<Config, "LINE_PUBLIC_URL">): boolean {
  return asker.platform !== "line" || config.LINE_PUBLIC_URL !== undefined;
}

/**
 * Whether the streaming setting is offered on the asker's platform: with `STREAMING=on`, where an
 * answer can grow as it is written (not on LINE, whose messages cannot be edited: docs/line.md).
 */
function streamingOffered(asker: Pick<SettingsAsker, "platform">, config: Pick<Config, "STREAMING">): boolean {
  return config.STREAMING === "on" && asker.platform !== "line";
}

/** The words of a voice replies choice. */
function voiceWords(locale: Locale, value: VoiceReplies): string {
  return localize(
    locale,
    value === "off"
      ? SETTINGS_TEXT.voiceOff
      : value === "always"
        ? SETTINGS_TEXT.voiceAlways
        : SETTINGS_TEXT["voiceWhen-spoken"],
  );
}

/** Whether `asker` may change this conversation's settings: the user of a private chat; in a group its administrators and the bot's admins. */
export async function mayChange(asker: SettingsAsker, config: Pick<Config, "ADMIN_USERS">): Promise<boolean> {
  if (asker.chatKind === "dm" || isAdmin(config, asker)) return true;
  // A Telegram group's anonymous administrators write as the group itself (`sender_chat`).
  if (asker.userId === `chat:${asker.chatId}`) return true;
  return (await asker.isGroupAdmin?.().catch(() => false)) === true;
}

/**
 * A persona shown in a listing: its first line, at most 80 characters, written as a Markdown
 * literal ({@link markdownLiteral}: the listing is Markdown, the persona shows as it was written).
 */
function personaPreview(persona: string): string {
  const first = persona.split("\n")[0] ?? "";
  const chars = [...first];
  const shown = chars.length > 80 || persona.includes("\n") ? `${chars.slice(0, 80).join("")}…` : first;
  return `「${markdownLiteral(shown)}」`;
}

/**
 * The `/settings` reply: every setting offered here with its value, and for someone who may change
 * them a button per change (the console, which has no buttons, a line on how to type them).
 * @throws when Redis is unreachable.
 */
export async function settingsListing(
  asker: SettingsAsker,
  services: SettingsServices,
  prefix?: string,
): Promise<CommandReply> {
  const { config } = services;
  const settings = await services.settings.read(conversationOf(asker));
  const allowed = await mayChange(asker, config);
  const { locale } = asker;
  const group = asker.chatKind === "group";
  const lines = [prefix, localize(locale, asker.topicId ? SETTINGS_TEXT.titleTopic : SETTINGS_TEXT.titleChat)].filter(
    (l): l is string => l !== undefined,
  );
  lines.push(
    localize(locale, SETTINGS_TEXT.persona, {
      value: settings.persona ? personaPreview(settings.persona) : localize(locale, SETTINGS_TEXT.personaNone),
    }),
  );
  if (config.MODELS.length > 1)
    lines.push(localize(locale, SETTINGS_TEXT.model, { value: modelLabel(config, settings.model) }));
  lines.push(localize(locale, SETTINGS_TEXT.language, { value: LANGUAGE_NAMES[settings.language] }));
  if (streamingOffered(asker, config))
    lines.push(
      localize(locale, SETTINGS_TEXT.streaming, {
        value: localize(locale, settings.streaming ? SETTINGS_TEXT.on : SETTINGS_TEXT.off),
      }),
    );
  if (group)
    lines.push(localize(locale, SETTINGS_TEXT.replies, { value: localize(locale, SETTINGS_TEXT[settings.replies]) }));
  if (config.TTS_BASE_URL)
    lines.push(
      localize(locale, SETTINGS_TEXT.voice, {
        value: voiceOffered(asker, config)
          ? voiceWords(locale, settings.voice)
          : localize(locale, SETTINGS_TEXT.voiceNotHere),
      }),
    );
  if (!allowed) return { text: [...lines, "", localize(locale, SETTINGS_TEXT.readOnly)].join("\n") };
  if (group && settings.replies === "mention") lines.push("", localize(locale, SETTINGS_TEXT.allWarning));
  if (asker.platform === "console")
    return { text: [...lines, "", localize(locale, SETTINGS_TEXT.consoleHint)].join("\n") };
  return { text: lines.join("\n"), buttons: settingsButtons(settings, asker, config) };
}

/** The buttons of a listing: each change offered here (another model, the other language, streaming and replies switched). */
function settingsButtons(settings: Settings, asker: SettingsAsker, config: Config): { label: string; data: string }[] {
  const { locale } = asker;
  const buttons: { label: string; data: string }[] = [];
  for (const model of config.MODELS.length > 1 ? config.MODELS : []) {
    if (model.id !== settings.model)
      buttons.push({
        label: localize(locale, SETTINGS_TEXT.buttonModel, { model: model.label }),
        data: `st:m:${modelHandle(model.id)}`,
      });
  }
  const other: Locale = settings.language === "en" ? "zh-TW" : "en";
  buttons.push({ label: localize(other, SETTINGS_TEXT.buttonLanguage), data: `st:l:${other}` });
  if (streamingOffered(asker, config)) {
    buttons.push({
      label: localize(locale, SETTINGS_TEXT.buttonStreaming, {
        value: localize(locale, settings.streaming ? SETTINGS_TEXT.off : SETTINGS_TEXT.on),
      }),
      data: `st:s:${settings.streaming ? "off" : "on"}`,
    });
  }
  if (asker.chatKind === "group") {
    const next = settings.replies === "all" ? "mention" : "all";
    buttons.push({
      label: localize(locale, SETTINGS_TEXT.buttonReplies, { value: localize(locale, SETTINGS_TEXT[next]) }),
      data: `st:r:${next}`,
    });
  }
  if (config.TTS_BASE_URL && voiceOffered(asker, config)) {
    // The next choice in turn: off → when-spoken → always → off.
    const next = VOICE_REPLIES[(VOICE_REPLIES.indexOf(settings.voice) + 1) % VOICE_REPLIES.length]!;
    buttons.push({
      label: localize(locale, SETTINGS_TEXT.buttonVoice, { value: voiceWords(locale, next) }),
      data: `st:v:${next}`,
    });
  }
  if (settings.persona) buttons.push({ label: localize(locale, SETTINGS_TEXT.buttonPersonaClear), data: "st:p:-" });
  return buttons;
}

/** The result of a change: the reply, and whether anything was changed. */
export interface SettingChange {
  text: string;
  changed: boolean;
}

/**
 * Changes one setting of the asker's conversation after the checks a typed change and a button
 * press share: who asks ({@link mayChange}), whether the setting is offered here and the value is
 * valid. `value` is as typed (`/settings language en`, `/persona <text>`, `/model <id>`).
 * @throws when Redis is unreachable.
 */
export async function changeSetting(
  asker: SettingsAsker,
  name: SettingName,
  value: string,
  services: SettingsServices,
): Promise<SettingChange> {
  const { config, settings } = services;
  const { locale } = asker;
  const refuse = (texts: Localized, params: Record<string, string | number> = {}): SettingChange => ({
    text: localize(locale, texts, params),
    changed: false,
  });
  const refuseValue = (setting: keyof typeof CHOICES): SettingChange => ({
    text: valueRefusal(locale, setting, value.trim()),
    changed: false,
  });
  if (!(await mayChange(asker, config))) return refuse(SETTINGS_TEXT.notAllowed);
  const conversation = conversationOf(asker);
  const trimmed = value.trim();
  switch (name) {
    case "persona": {
      if (/^(clear|none|-|清除)$/i.test(trimmed)) {
        await settings.set(conversation, "persona", undefined);
        return { text: localize(locale, SETTINGS_TEXT.personaCleared), changed: true };
      }
      const persona = cleanPersona(value);
      if (persona === "") return refuse(SETTINGS_TEXT.personaHint, { max: PERSONA_MAX });
      const length = [...persona].length;
      if (length > PERSONA_MAX) return refuse(SETTINGS_TEXT.personaTooLong, { length, max: PERSONA_MAX });
      await settings.set(conversation, "persona", persona);
      return { text: localize(locale, SETTINGS_TEXT.personaSet), changed: true };
    }
    case "model": {
      const list = config.MODELS.map((m) => (m.label === m.id ? m.id : `${m.label} (${m.id})`)).join(", ");
      const model = config.MODELS.find((m) => m.id === trimmed || m.label.toLowerCase() === trimmed.toLowerCase());
      if (!model) return refuse(SETTINGS_TEXT.modelUnknown, { model: quoted(trimmed, 100), list });
      await settings.set(conversation, "model", model.id);
      return { text: localize(locale, SETTINGS_TEXT.modelSet, { model: model.label }), changed: true };
    }
    case "language": {
      const language: Locale | undefined = /^(zh|zh-tw|zh_tw|中文|繁體中文)$/i.test(trimmed)
        ? "zh-TW"
        : /^(en|english|英文)$/i.test(trimmed)
          ? "en"
          : undefined;
      if (!language) return refuseValue("language");
      await settings.set(conversation, "language", language);
      return { text: localize(language, SETTINGS_TEXT.languageSet), changed: true };
    }
    case "streaming": {
      if (config.STREAMING !== "on") return refuse(SETTINGS_TEXT.streamingUnavailable);
      if (!streamingOffered(asker, config)) return refuse(SETTINGS_TEXT.streamingNotHere);
      const on = /^(on|開)$/i.test(trimmed) ? true : /^(off|關)$/i.test(trimmed) ? false : undefined;
      if (on === undefined) return refuseValue("streaming");
      await settings.set(conversation, "streaming", on ? "on" : "off");
      return {
        text: localize(locale, SETTINGS_TEXT.streamingSet, {
          value: localize(locale, on ? SETTINGS_TEXT.on : SETTINGS_TEXT.off),
        }),
        changed: true,
      };
    }
    case "replies": {
      if (asker.chatKind !== "group") return refuse(SETTINGS_TEXT.repliesGroupOnly);
      const mode = /^(mention|mentions)$/i.test(trimmed) ? "mention" : /^all$/i.test(trimmed) ? "all" : undefined;
      if (!mode) return refuseValue("replies");
      // Telegram with privacy mode on never delivers the other messages: say so instead of pretending.
      if (mode === "all" && asker.readsAllGroupMessages && !(await asker.readsAllGroupMessages()))
        return refuse(SETTINGS_TEXT.privacyMode);
      await settings.set(conversation, "replies", mode);
      return {
        text: localize(locale, mode === "all" ? SETTINGS_TEXT.repliesAllSet : SETTINGS_TEXT.repliesSet),
        changed: true,
      };
    }
    case "voice": {
      if (!config.TTS_BASE_URL) return refuse(SETTINGS_TEXT.voiceUnavailable);
      if (!voiceOffered(asker, config)) return refuse(SETTINGS_TEXT.voiceNotOnLine);
      const mode = /^(off|關|none)$/i.test(trimmed)
        ? "off"
        : /^(when-spoken|when_spoken|spoken|voice)$/i.test(trimmed)
          ? "when-spoken"
          : /^(always|on|開)$/i.test(trimmed)
            ? "always"
            : undefined;
      if (!mode) return refuseValue("voice");
      await settings.set(conversation, "voice", mode);
      return { text: localize(locale, SETTINGS_TEXT.voiceSet, { value: voiceWords(locale, mode) }), changed: true };
    }
  }
}

/**
 * `/settings [<name> <value>]`: the listing, or a typed change (`/settings language en`).
 * @throws when Redis is unreachable.
 */
export async function settingsCommand(
  asker: SettingsAsker,
  args: string,
  services: SettingsServices,
): Promise<string | CommandReply> {
  const [rawName = "", ...rest] = args.trim().split(/\s+/);
  if (rawName === "") return settingsListing(asker, services);
  const name = (["persona", "model", "language", "streaming", "replies", "voice"] as const).find(
    (n) => n === rawName.toLowerCase(),
  );
  if (!name) return localize(asker.locale, SETTINGS_TEXT.unknownSetting, { name: quoted(rawName, 32) });
  const value = name === "persona" ? args.trim().slice(rawName.length) : rest.join(" ");
  return (await changeSetting(asker, name, value, services)).text;
}

/**
 * `/persona [<text>]`: sets the persona; alone, shows it (with a button to clear it for someone
 * who may).
 * @throws when Redis is unreachable.
 */
export async function personaCommand(
  asker: SettingsAsker,
  args: string,
  services: SettingsServices,
): Promise<string | CommandReply> {
  if (args.trim() !== "") return (await changeSetting(asker, "persona", args, services)).text;
  const { locale } = asker;
  const settings = await services.settings.read(conversationOf(asker));
  const hint = localize(locale, SETTINGS_TEXT.personaHint, { max: PERSONA_MAX });
  if (!settings.persona) return `${localize(locale, SETTINGS_TEXT.personaNoneHere)}\n${hint}`;
  // The reply is Markdown: the persona, as it was written (its lines too), is a literal in it.
  const text = localize(locale, SETTINGS_TEXT.personaShow, { persona: markdownLiteral(settings.persona) });
  if (!(await mayChange(asker, services.config)) || asker.platform === "console") return text;
  return { text, buttons: [{ label: localize(locale, SETTINGS_TEXT.buttonPersonaClear), data: "st:p:-" }] };
}

/**
 * `/model [<id>]`: switches the conversation's model among `MODELS`; alone, shows the current one
 * and the others (as buttons for someone who may change it).
 * @throws when Redis is unreachable.
 */
export async function modelCommand(
  asker: SettingsAsker,
  args: string,
  services: SettingsServices,
): Promise<string | CommandReply> {
  const { config } = services;
  const { locale } = asker;
  if (config.MODELS.length <= 1)
    return localize(locale, SETTINGS_TEXT.modelOnlyOne, { model: modelLabel(config, config.ANTHROPIC_MODEL) });
  if (args.trim() !== "") return (await changeSetting(asker, "model", args, services)).text;
  const settings = await services.settings.read(conversationOf(asker));
  const list = config.MODELS.map((m) => (m.label === m.id ? m.id : `${m.label} (${m.id})`)).join(", ");
  const text = localize(locale, SETTINGS_TEXT.modelShow, { model: modelLabel(config, settings.model), list });
  if (!(await mayChange(asker, config)) || asker.platform === "console") return text;
  const buttons = config.MODELS.filter((m) => m.id !== settings.model).map((m) => ({
    label: localize(locale, SETTINGS_TEXT.buttonModel, { model: m.label }),
    data: `st:m:${modelHandle(m.id)}`,
  }));
  return { text, buttons };
}

/** The answer to a settings button: a short notice for the presser, and the listing as it is now when something changed. */
export interface SettingsPressAnswer {
  /** At most 200 characters (Telegram's `answerCallbackQuery`). */
  notice: string;
  /** The listing after the change, to show in place of the pressed message (or as the reply to the press). */
  listing?: CommandReply;
  changed: boolean;
}

/**
 * A press on a settings button in the pressed message's conversation: the same checks as a typed
 * change ({@link changeSetting}), so a press by someone who may not change the settings, or with
 * data that is not an offered value, changes nothing.
 * @throws when Redis is unreachable.
 */
export async function pressSettingsButton(
  asker: SettingsAsker,
  data: string,
  services: SettingsServices,
): Promise<SettingsPressAnswer> {
  const { locale } = asker;
  const m = /^st:([pmlsrv]):(.{1,60})$/s.exec(data);
  const name = m ? CODES[m[1]!] : undefined;
  if (!m || !name) return { notice: localize(locale, SETTINGS_TEXT.gone), changed: false };
  let value = m[2]!;
  if (name === "persona") {
    if (value !== "-") return { notice: localize(locale, SETTINGS_TEXT.gone), changed: false };
    value = "clear";
  }
  if (name === "model") {
    const model = services.config.MODELS.find((choice) => modelHandle(choice.id) === value);
    if (!model) return { notice: localize(locale, SETTINGS_TEXT.gone), changed: false };
    value = model.id;
  }
  const change = await changeSetting(asker, name, value, services);
  if (!change.changed) return { notice: cut(change.text), changed: false };
  const now = name === "language" ? (value as Locale) : locale;
  const listing = await settingsListing({ ...asker, locale: now }, services, change.text);
  return { notice: cut(localize(now, SETTINGS_TEXT.changed)), listing, changed: true };
}

/** At most 200 characters (code points), for a button's notice. */
function cut(text: string): string {
  const chars = [...text];
  return chars.length <= 200 ? text : `${chars.slice(0, 199).join("")}…`;
}
