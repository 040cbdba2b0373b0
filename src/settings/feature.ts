/**
 * The settings feature: `/settings`, `/persona` and `/model` and their buttons (`st:…`, which
 * change a setting only when the presser may change the conversation's settings), and the
 * conversation's settings, which move with it (and which `/reset` keeps). Its store (`store.ts`) is
 * lent to the core: every reply's language and a group's replies (`AdapterServices.languageOf`,
 * `repliesToAll`) and every answer's persona, model and language (`AnswerServices.settings`) come from it.
 */
import { modelCommand, personaCommand, pressSettingsButton, settingsCommand } from "../commands/settings.js";
import { defineFeature, PRESS_AGAIN } from "../feature.js";
import { localize, type Localized } from "../i18n.js";
import { conversationKeys } from "../queue/keys.js";
import { repliesToAll, SettingsStore } from "./store.js";

const d = (zh: string, en: string): Localized => ({ "zh-TW": zh, en });

/** The settings feature (see the module comment). */
export const settingsFeature = defineFeature<SettingsStore>({
  name: "settings",
  // Every reply speaks its conversation's language; a group set to `all` has all its messages answered.
  start({ redis, config, log }) {
    const settings = new SettingsStore(redis, config, log);
    return {
      state: settings,
      lends: {
        languageOf: (conversation) => settings.language(conversation),
        repliesToAll: (message) => repliesToAll(settings, message, log),
      },
    };
  },
  // Every answer reads its conversation's settings with its history (`AnswerServices.settings`).
  worker: ({ redis, config, log }) => ({ lends: { settings: new SettingsStore(redis, config, log) } }),
  commands: [
    {
      name: "settings",
      description: d(
        "這個聊天的設定：角色、模型、語言、串流、群組回覆、語音回覆",
        "This chat's settings: persona, model, language, streaming, group replies, voice replies",
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
      run: (inv, { config }, settings) => settingsCommand(inv, inv.args, { config, settings }),
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
      run: (inv, { config }, settings) => personaCommand(inv, inv.args, { config, settings }),
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
      run: (inv, { config }, settings) => modelCommand(inv, inv.args, { config, settings }),
    },
  ],
  buttons: {
    prefixes: ["st:"],
    async press(press, locale, settings, { config, log }) {
      try {
        const answer = await pressSettingsButton(
          {
            platform: press.platform,
            chatId: press.chatId,
            ...(press.topicId ? { topicId: press.topicId } : {}),
            chatKind: press.chatKind ?? "group",
            userId: press.userId,
            locale,
            isGroupAdmin: press.isGroupAdmin,
            readsAllGroupMessages: press.readsAllGroupMessages,
          },
          press.data,
          { config, settings },
        );
        if (answer.changed)
          log.info(
            {
              platform: press.platform,
              chatId: press.chatId,
              topicId: press.topicId,
              by: press.userId,
              button: press.data.slice(0, 5),
            },
            "conversation settings changed",
          );
        return {
          kind: "settings",
          notice: answer.notice,
          ...(answer.listing ? { replaceWith: answer.listing } : {}),
        };
      } catch (error) {
        log.error({ err: error, platform: press.platform, chatId: press.chatId }, "settings button failed");
        return { kind: "settings", notice: localize(locale, PRESS_AGAIN), failed: true };
      }
    },
  },
  conversation: { stores: [{ name: "settings", keys: (c) => [conversationKeys(c).settings] }] },
});
