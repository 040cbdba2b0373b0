/**
 * The memory feature: `/memory` (what the bot remembers here, with delete buttons) and `/forget`
 * (which asks first, with the same question and buttons as the listing's delete-all),
 * the delete and undo buttons (`mm:…`; in a group only its administrators and bot admins may
 * delete), the memory tool (`tool.ts`, when `MEMORY=on`), and a group's shared memory, which moves
 * with the group (a topic shares its group's, so only the whole chat moves it). The memory block
 * of each request is the answer pipeline's (`src/worker/context.ts`).
 */
import { isAdmin, userPrincipal } from "../access/policy.js";
import { forgetMemory, memoryListing, MEMORY_TEXT, pressMemoryButton, scopeOfAsker } from "../commands/memory.js";
import { defineFeature } from "../feature.js";
import { localize, type Localized } from "../i18n.js";
import { memoryKey, MemoryStore } from "./store.js";
import { memoryTools } from "./tool.js";

const d = (zh: string, en: string): Localized => ({ "zh-TW": zh, en });

/** The memory feature (see the module comment). */
export const memoryFeature = defineFeature<MemoryStore>({
  name: "memory",
  start: ({ redis, log }) => ({ state: new MemoryStore(redis, { log }) }),
  commands: [
    {
      name: "memory",
      description: d(
        "我記得的事（私訊：你的；群組：群組的），可逐一刪除",
        "What I remember here (yours in DMs, the group's in groups), with delete buttons",
      ),
      access: "everyone",
      async run(inv, { config }, memory) {
        // In a group the delete buttons are for those who may delete: its administrators and the bot's admins.
        const mayDelete =
          inv.chatKind !== "group" || isAdmin(config, inv) || (await inv.isGroupAdmin?.().catch(() => false)) === true;
        return memoryListing({ ...inv, timezone: config.TIMEZONE }, memory, {
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
      // Asks first (the listing's delete-all question and buttons); the press erases, and logs it.
      async run(inv, services, memory) {
        const reply = await forgetMemory({ ...inv, timezone: services.config.TIMEZONE }, memory);
        if (reply.buttons ?? reply.typed)
          services.log.info({ scope: scopeOfAsker(inv), by: userPrincipal(inv) }, "memory erase asked (/forget)");
        return reply;
      },
    },
  ],
  buttons: {
    prefixes: ["mm:"],
    async press(press, locale, memory, { config, log }) {
      if (!press.chatKind)
        return {
          kind: "memory",
          notice: localize(locale, { "zh-TW": "這裡無法刪除記憶。", en: "Memory cannot be deleted from here." }),
        };
      const asker = {
        data: press.data,
        platform: press.platform,
        chatId: press.chatId,
        chatKind: press.chatKind,
        userId: press.userId,
        locale,
        isGroupAdmin: press.isGroupAdmin,
      };
      try {
        const answer = await pressMemoryButton({ ...asker, admin: isAdmin(config, asker) }, memory);
        if (answer.deletedFile || answer.closeText)
          log.info(
            {
              scope: scopeOfAsker(asker),
              by: `${asker.platform}:${asker.userId}`,
              all: answer.closeText !== undefined,
            },
            "memory deleted (/memory or /forget button)",
          );
        return {
          kind: "memory",
          notice: answer.notice,
          ...(answer.closeText ? { closeText: answer.closeText } : {}),
          ...(answer.deletedFile ? { dropButton: true } : {}),
          // "Delete all" asks in place of the listing (Telegram edits it; Discord and LINE reply with the question).
          ...(answer.confirm ? { replaceWith: answer.confirm } : {}),
        };
      } catch (error) {
        log.error({ err: error, platform: press.platform, chatId: press.chatId }, "/memory delete button failed");
        return { kind: "memory", notice: localize(locale, MEMORY_TEXT.tryAgain) };
      }
    },
  },
  tools: memoryTools,
  conversation: {
    stores: [
      {
        // `memory:group:{<platform>:<chatId>}` (src/memory/store.ts).
        name: "group memory",
        keys: (c) => (c.topicId ? [] : [memoryKey({ kind: "group", platform: c.platform, chatId: c.chatId })]),
      },
    ],
  },
});
