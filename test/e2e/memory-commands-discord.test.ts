/**
 * Issue 28 (memory) end to end on Discord: `/memory` and `/forget` as slash commands (ephemeral
 * replies), the delete buttons of the listing, and who may delete in a server channel (Manage
 * Messages, or a bot admin). Erased memory is gone for the next request, answered by another worker.
 */
import { describe, expect, it } from "vitest";
import { memoryKey } from "../../src/memory/store.js";
import type { RedisClient } from "../../src/redis.js";
import type { FakeInteraction, FakeUser, SentMessage } from "../fakes/discord.js";
import { FakeDiscord } from "../fakes/discord.js";
import { useStack, type Stack } from "./harness.js";
import { memoryBlockOf, memoryModel } from "./memory-helpers.js";
import { ANSWER_TIMEOUT_MS, requestsFor } from "./scenarios-common.js";

let stack: Stack;
let redis: RedisClient;
useStack({ model: memoryModel }, (started, connection) => {
  stack = started;
  redis = connection;
});

let nextUser = 0;
function user(name: string): FakeUser {
  nextUser += 1;
  return { id: `72810000000000${String(nextUser).padStart(4, "0")}`, username: name.toLowerCase(), global_name: name };
}

/** `author` writes `content` in a DM, or in the text channel mentioning the bot; resolves with the bot's next message there. */
async function ask(author: FakeUser, content: string, where: "dm" | "channel" = "dm"): Promise<SentMessage> {
  const dc = stack.discord;
  const dm = where === "dm";
  return (await dc.ask(author, dm ? content : `<@${dc.bot.id}> ${content}`, { dm }, ANSWER_TIMEOUT_MS)).answer;
}

/** The ephemeral text an interaction was answered with (initial reply, or the edit after a deferral). */
async function ephemeral(interaction: FakeInteraction): Promise<string> {
  const dc = stack.discord;
  const response = await dc.waitFor(() => interaction.response, ANSWER_TIMEOUT_MS, "the interaction response");
  expect(Number(response.data?.flags ?? 0) & 64).toBe(64);
  if (response.type === 4) return String(response.data?.content);
  return String((await dc.waitFor(() => interaction.edits[0], ANSWER_TIMEOUT_MS, "the deferred reply")).content);
}

type Button = { label: string; custom_id: string };

function buttonsOf(interaction: FakeInteraction): Button[] {
  const rows = (interaction.response?.data?.components ?? interaction.edits[0]?.components ?? []) as {
    components: Button[];
  }[];
  return rows.flatMap((r) => r.components);
}

describe("Discord: /memory and /forget", () => {
  it("in a DM: /memory lists with delete buttons, a press deletes the file, /forget asks, Cancel keeps, ⚠️ erases the rest, for every worker", async () => {
    const dc = stack.discord;
    const kim = user("Kim");
    const saved = await ask(kim, "remember 住在台南 as home");
    expect(saved.payload.content).toBe(
      "memory: File created successfully at: /memories/home.md\n\n📝 記住了：住在台南",
    );
    await ask(kim, "remember 不吃香菜 as food");

    const listed = dc.slashCommand(kim, "memory", { dm: true, locale: "zh-TW" });
    const text = await ephemeral(listed);
    expect(text).toMatch(/^我記得的事（你的個人記憶，只在私訊中使用，\d+B／16K）：/);
    expect(text).toContain("住在台南");
    expect(text).toContain("不吃香菜");
    expect(buttonsOf(listed).map((b) => b.label)).toEqual(["🗑 刪除 food.md", "🗑 刪除 home.md", "🗑 全部刪除"]);

    const second = await stack.startWorker();
    await stack.worker.stop();
    stack.worker = second;
    const food = buttonsOf(listed).find((b) => b.label === "🗑 刪除 food.md")!.custom_id;
    expect(await ephemeral(dc.clickEphemeralButton(kim, listed, food))).toBe("已刪除 food.md。");
    await ask(kim, "hello K1");
    const block = memoryBlockOf(requestsFor(stack, "hello K1")[0]!)!;
    expect(block).toContain("住在台南");
    expect(block).not.toContain("不吃香菜");

    // /forget asks first, with the listing's delete-all question and buttons; Cancel keeps the files.
    const kimKey = memoryKey({ kind: "personal", platform: "discord", userId: kim.id });
    const asked = dc.slashCommand(kim, "forget", { dm: true, locale: "zh-TW" });
    expect(await ephemeral(asked)).toBe("確定要清除你的全部個人記憶（1 個檔案）嗎？清除後無法復原。");
    expect(buttonsOf(asked).map((b) => b.label)).toEqual(["⚠️ 確定全部刪除", "取消"]);
    expect(await redis.get(kimKey)).toContain("住在台南");
    expect(await ephemeral(dc.clickEphemeralButton(kim, asked, "mm:c"))).toBe("已取消，記憶沒有變更。");
    expect(await redis.get(kimKey)).toContain("住在台南");
    const again = dc.slashCommand(kim, "forget", { dm: true, locale: "zh-TW" });
    await ephemeral(again);
    const yes = buttonsOf(again).find((b) => b.label === "⚠️ 確定全部刪除")!.custom_id;
    expect(yes).toMatch(/^mm:A:[A-Za-z0-9_-]{16}$/);
    expect(await ephemeral(dc.clickEphemeralButton(kim, again, yes))).toBe(
      "已清除你的個人記憶（1 個檔案）。對話紀錄不受影響（要清除請用 /reset）。",
    );
    expect(await redis.exists(kimKey)).toBe(0);
    // Nothing left: said so, with no question.
    const nothing = dc.slashCommand(kim, "forget", { dm: true, locale: "zh-TW" });
    expect(await ephemeral(nothing)).toBe("沒有需要清除的記憶。");
    expect(buttonsOf(nothing)).toEqual([]);
    await ask(kim, "hello K2");
    expect(memoryBlockOf(requestsFor(stack, "hello K2")[0]!)).toBeUndefined();
  });

  it("in a server channel: anyone may look; deleting (and answering /forget's question) needs Manage Messages", async () => {
    const dc = stack.discord;
    const lee = user("Lee");
    const mo = user("Mo");
    await ask(lee, "remember 週日練團 as band", "channel");
    const key = memoryKey({ kind: "group", platform: "discord", chatId: dc.channelId });

    // A member without Manage Messages sees the memory without delete buttons, and who may delete.
    const listed = dc.slashCommand(mo, "memory", { channelId: dc.channelId, locale: "zh-TW" });
    const shown = await ephemeral(listed);
    expect(shown).toContain("這個群組的共同記憶（所有成員共用");
    expect(shown).toContain("（只有群組管理員可以刪除共同記憶。）");
    expect(buttonsOf(listed)).toEqual([]);
    // With Manage Messages, the buttons are there.
    const managed = dc.slashCommand(mo, "memory", {
      channelId: dc.channelId,
      locale: "zh-TW",
      permissions: FakeDiscord.MANAGE_MESSAGES_PERMISSIONS,
    });
    expect(await ephemeral(managed)).not.toContain("只有群組管理員");
    expect(buttonsOf(managed).map((b) => b.label)).toEqual(["🗑 刪除 band.md", "🗑 全部刪除"]);
    expect(await ephemeral(dc.slashCommand(mo, "forget", { channelId: dc.channelId, locale: "zh-TW" }))).toBe(
      "抱歉，在群組裡只有群組管理員可以使用這個指令。",
    );
    expect(await redis.get(key)).toContain("週日練團");

    const asked = dc.slashCommand(mo, "forget", {
      channelId: dc.channelId,
      locale: "zh-TW",
      permissions: FakeDiscord.MANAGE_MESSAGES_PERMISSIONS,
    });
    expect(await ephemeral(asked)).toBe("確定要清除這個群組的全部共同記憶（1 個檔案）嗎？清除後無法復原。");
    expect(buttonsOf(asked).map((b) => b.label)).toEqual(["⚠️ 確定全部刪除", "取消"]);
    expect(await redis.get(key)).toContain("週日練團");
    const yes = buttonsOf(asked)[0]!.custom_id;
    // A press without Manage Messages (the permission taken away since) is refused and erases nothing.
    expect(await ephemeral(dc.clickEphemeralButton(mo, asked, yes))).toBe("在群組裡只有群組管理員可以刪除共同記憶。");
    expect(await redis.get(key)).toContain("週日練團");
    expect(
      await ephemeral(
        dc.clickEphemeralButton(mo, asked, yes, { permissions: FakeDiscord.MANAGE_MESSAGES_PERMISSIONS }),
      ),
    ).toBe("已清除這個群組的共同記憶（1 個檔案）。");
    expect(await redis.exists(key)).toBe(0);
  });
});
