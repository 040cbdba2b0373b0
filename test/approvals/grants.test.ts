/**
 * "Always allow" grants on a real Redis: requester × tool × conversation, expiry by the stored
 * time (checked at every use) and by the key's TTL, revoke, and the decision side of the approval
 * store (`always` accepted only where the prompt offered it, only from the requester).
 */
import type { RedisClient } from "../../src/redis.js";
import { beforeEach, describe, expect, it } from "vitest";
import type { PausedRun } from "../../src/agent/contract.js";
import { decisionNotice } from "../../src/approvals/decider.js";
import { GrantStore, grantLookup, type GrantOwner } from "../../src/approvals/grants.js";
import { ApprovalStore, type NewApproval } from "../../src/approvals/store.js";
import {
  parsePermissionButton,
  permissionButtonData,
  permissionsListing,
  pressPermissionButton,
  toolHandle,
} from "../../src/commands/permissions.js";
import type { IncomingMessage } from "../../src/queue/incoming.js";
import { useRedis } from "../helpers/use-redis.js";

let redis: RedisClient;
useRedis((connection) => (redis = connection));
beforeEach(async () => {
  await redis.flushall();
});

const DAY = 86_400_000;
const alice: GrantOwner = { platform: "telegram", chatId: "-100300", userId: "301" };

/** A store whose clock the test moves. */
function clockedStore(ttlMs = 30 * DAY): { grants: GrantStore; clock: { now: number } } {
  const clock = { now: 1_800_000_000_000 };
  return { grants: new GrantStore(redis, { ttlMs, now: () => clock.now }), clock };
}

describe("GrantStore", () => {
  it("a grant applies to its owner, tool and conversation only", async () => {
    const { grants, clock } = clockedStore();
    const grant = await grants.grant(alice, "delete_todo");
    expect(grant).toEqual({ tool: "delete_todo", grantedAt: clock.now, expiresAt: clock.now + 30 * DAY });
    expect(await grants.find(alice, "delete_todo")).toEqual(grant);
    expect(await grants.find({ ...alice, userId: "302" }, "delete_todo")).toBeUndefined();
    expect(await grants.find(alice, "erase_notes")).toBeUndefined();
    expect(await grants.find({ ...alice, chatId: "-100301" }, "delete_todo")).toBeUndefined();
    expect(await grants.find({ ...alice, platform: "discord" }, "delete_todo")).toBeUndefined();
    // A Telegram topic is a conversation of its own, both ways.
    expect(await grants.find({ ...alice, topicId: "11" }, "delete_todo")).toBeUndefined();
    await grants.grant({ ...alice, topicId: "11" }, "complete_todo");
    expect(await grants.find(alice, "complete_todo")).toBeUndefined();
    expect((await grants.list(alice)).map((g) => g.tool)).toEqual(["delete_todo"]);
    expect((await grants.list({ ...alice, topicId: "11" })).map((g) => g.tool)).toEqual(["complete_todo"]);
  });

  it("keys carry the person's own hash tag and the conversation key", async () => {
    const { grants } = clockedStore();
    expect(grants.key(alice)).toBe("grants:{telegram:301}:telegram:-100300");
    expect(grants.key({ ...alice, topicId: "11" })).toBe("grants:{telegram:301}:telegram:-100300/11");
    await grants.grant(alice, "delete_todo");
    expect(await redis.hkeys("grants:{telegram:301}:telegram:-100300")).toEqual(["delete_todo"]);
  });

  it("an expired grant no longer counts, is not listed, and is removed when read", async () => {
    const { grants, clock } = clockedStore(60_000);
    await grants.grant(alice, "delete_todo");
    clock.now += 59_999;
    expect(await grants.find(alice, "delete_todo")).toBeDefined();
    clock.now += 1;
    expect(await grants.find(alice, "delete_todo")).toBeUndefined();
    expect(await redis.hexists(grants.key(alice), "delete_todo")).toBe(0);
    await grants.grant(alice, "delete_todo");
    clock.now += 60_000;
    expect(await grants.list(alice)).toEqual([]);
    expect(await redis.exists(grants.key(alice))).toBe(0);
    // several expired at once: all removed by one listing, the live one kept
    await grants.grant(alice, "delete_todo");
    await grants.grant(alice, "erase_notes");
    await grants.grant(alice, "complete_todo");
    clock.now += 30_000;
    await grants.grant(alice, "send_mail");
    clock.now += 30_000;
    expect((await grants.list(alice)).map((g) => g.tool)).toEqual(["send_mail"]);
    expect(await redis.hkeys(grants.key(alice))).toEqual(["send_mail"]);
  });

  it("the key's TTL follows the latest grant, so Redis drops grants nobody reads again", async () => {
    const grants = new GrantStore(redis, { ttlMs: 1500 });
    await grants.grant(alice, "delete_todo");
    const ttl = await redis.pttl(grants.key(alice));
    expect(ttl).toBeGreaterThan(1000);
    expect(ttl).toBeLessThanOrEqual(1500);
    const longer = new GrantStore(redis, { ttlMs: 10 * DAY });
    await longer.grant(alice, "complete_todo");
    expect(await redis.pttl(grants.key(alice))).toBeGreaterThan(9 * DAY);
    // A shorter grant never shortens the key's life (the longer grant must survive).
    await grants.grant(alice, "delete_todo");
    expect(await redis.pttl(grants.key(alice))).toBeGreaterThan(9 * DAY);
  });

  it("a renewed grant counts from the renewal; revoke removes it at once", async () => {
    const { grants, clock } = clockedStore(60_000);
    await grants.grant(alice, "delete_todo");
    clock.now += 50_000;
    const renewed = await grants.grant(alice, "delete_todo");
    expect(renewed.expiresAt).toBe(clock.now + 60_000);
    clock.now += 50_000;
    expect(await grants.find(alice, "delete_todo")).toEqual(renewed);
    expect(await grants.revoke(alice, "delete_todo")).toBe(true);
    expect(await grants.find(alice, "delete_todo")).toBeUndefined();
    expect(await grants.revoke(alice, "delete_todo")).toBe(false);
  });

  it("an unreadable stored value is ignored, not trusted", async () => {
    const { grants } = clockedStore();
    await redis.hset(grants.key(alice), "delete_todo", "{not json");
    expect(await grants.find(alice, "delete_todo")).toBeUndefined();
    expect(await grants.list(alice)).toEqual([]);
  });

  it("grantLookup binds the message's sender and conversation", async () => {
    const { grants } = clockedStore();
    await grants.grant({ ...alice, topicId: "7" }, "delete_todo");
    expect(await grantLookup(grants, { ...alice, topicId: "7" })("delete_todo")).toBeDefined();
    expect(await grantLookup(grants, alice)("delete_todo")).toBeUndefined();
    expect(await grantLookup(grants, { ...alice, topicId: "7", userId: "302" })("delete_todo")).toBeUndefined();
  });

  it("refuses a length that is not positive", () => {
    expect(() => new GrantStore(redis, { ttlMs: 0 })).toThrow(RangeError);
  });
});

describe("/permissions listing and revoke buttons", () => {
  it("lists the asker's grants here with one revoke button each; only the owner's press revokes", async () => {
    const { grants, clock } = clockedStore();
    clock.now = Date.UTC(2026, 11, 1, 0, 0, 0);
    await grants.grant(alice, "delete_todo");
    await grants.grant(alice, "a_tool_with_a_rather_long_name_of_sixty_four_characters_abcdefg");
    await grants.grant({ ...alice, userId: "302" }, "delete_todo");
    const listing = await permissionsListing({ ...alice, locale: "zh-TW", timezone: "Asia/Taipei" }, grants);
    expect(listing.text.split("\n")).toEqual([
      "你在這裡「一律允許」的工具（到期前不再詢問你）：",
      "• a_tool_with_a_rather_long_name_of_sixty_four_characters_abcdefg — 到 2026年12月31日星期四 08:00",
      "• delete_todo — 到 2026年12月31日星期四 08:00",
    ]);
    expect(listing.buttons.map((b) => b.label)).toEqual([
      "🚫 撤銷 a_tool_with_a_rather_long_name_of_sixty_four_characters_abcdefg",
      "🚫 撤銷 delete_todo",
    ]);
    for (const b of listing.buttons) expect(Buffer.byteLength(b.data)).toBeLessThanOrEqual(64);
    expect(parsePermissionButton(listing.buttons[1]!.data)).toEqual({
      handle: toolHandle("delete_todo"),
      userId: "301",
    });

    const data = permissionButtonData("301", "delete_todo");
    expect(
      await pressPermissionButton({ data, platform: "telegram", chatId: alice.chatId, userId: "302" }, grants, "zh-TW"),
    ).toEqual({ notice: "這是別人的授權，只有本人可以撤銷。", revoked: false });
    expect(await grants.find({ ...alice, userId: "302" }, "delete_todo")).toBeDefined();
    expect(
      await pressPermissionButton({ data, platform: "telegram", chatId: alice.chatId, userId: "301" }, grants, "en"),
    ).toEqual({ notice: "Revoked: delete_todo will ask you again.", revoked: true });
    expect(await grants.find(alice, "delete_todo")).toBeUndefined();
    expect(await grants.find({ ...alice, userId: "302" }, "delete_todo")).toBeDefined();
    expect(
      await pressPermissionButton({ data, platform: "telegram", chatId: alice.chatId, userId: "301" }, grants, "zh-TW"),
    ).toEqual({ notice: "這個授權已經撤銷或過期了。", revoked: false });
    expect(
      await pressPermissionButton(
        { data: "pm:garbage", platform: "telegram", chatId: alice.chatId, userId: "301" },
        grants,
        "zh-TW",
      ),
    ).toMatchObject({ revoked: false });
  });

  it("a revoke button fits Telegram's 64-byte callback_data for owner ids of up to 44 characters", () => {
    const longest = "9".repeat(44);
    const data = permissionButtonData(longest, "a_tool_with_a_rather_long_name_of_sixty_four_characters_abcdefg");
    expect(Buffer.byteLength(data)).toBe(64);
    expect(parsePermissionButton(data)).toEqual({
      handle: toolHandle("a_tool_with_a_rather_long_name_of_sixty_four_characters_abcdefg"),
      userId: longest,
    });
    expect(parsePermissionButton(permissionButtonData(`${longest}9`, "delete_todo"))).toBeUndefined();
  });

  it("a press in a topic revokes the grant of that topic only", async () => {
    const { grants } = clockedStore();
    await grants.grant({ ...alice, topicId: "11" }, "delete_todo");
    await grants.grant(alice, "delete_todo");
    const data = permissionButtonData("301", "delete_todo");
    expect(
      await pressPermissionButton(
        { data, platform: "telegram", chatId: alice.chatId, topicId: "11", userId: "301" },
        grants,
        "en",
      ),
    ).toEqual({ notice: "Revoked: delete_todo will ask you again.", revoked: true });
    expect(await grants.find({ ...alice, topicId: "11" }, "delete_todo")).toBeUndefined();
    expect(await grants.find(alice, "delete_todo")).toBeDefined();
  });

  it("says so when there is nothing, and the console gets a how-to-revoke line instead of buttons", async () => {
    const { grants } = clockedStore();
    const none = await permissionsListing({ ...alice, locale: "en", timezone: "Asia/Taipei" }, grants);
    expect(none).toEqual({
      text: "You have no “always allow” grants here. On a confirmation prompt, press “Always allow” to add one.",
      buttons: [],
    });
    const me: GrantOwner = { platform: "console", chatId: "local", userId: "me" };
    await grants.grant(me, "delete_todo");
    const listing = await permissionsListing({ ...me, locale: "en", timezone: "Asia/Taipei" }, grants);
    expect(listing.buttons).toEqual([]);
    expect(listing.text).toContain("To revoke one, type /permissions <tool name>");
  });
});

describe("ApprovalStore: deciding with always allow", () => {
  const message: IncomingMessage = {
    platform: "telegram",
    chatId: "-100300",
    chatKind: "group",
    userId: "301",
    userName: "Alice",
    text: "delete #1",
    messageId: "m1",
    sentAt: 1,
    reply: {},
  };
  const run: PausedRun = {
    messages: [{ role: "user", content: "delete #1" }],
    history: [],
    results: [],
    pending: [],
    turns: 1,
    callCounts: {},
  };
  const approval = (alwaysAllow: boolean): NewApproval => ({
    message,
    run,
    call: { toolUseId: "toolu_1", name: "delete_todo", input: {} },
    action: "刪除待辦 #1",
    locale: "zh-TW",
    alwaysAllow,
  });

  it("accepts always from the requester where offered, records it, and tells the grant's length", async () => {
    const decisions: unknown[] = [];
    const store = new ApprovalStore(redis, {
      timeoutMs: 60_000,
      grantMs: 30 * DAY,
      onDecision: (d) => void decisions.push(d),
    });
    const id = await store.create(approval(true));
    expect((await store.get(id))!.alwaysAllow).toBe(true);
    expect(
      await store.decide({ approvalId: id, platform: "telegram", deciderId: "302", approve: true, always: true }),
    ).toEqual({ status: "not_requester", requesterName: "Alice" });
    const result = await store.decide({
      approvalId: id,
      platform: "telegram",
      deciderId: "301",
      approve: false,
      always: true,
    });
    expect(result).toEqual({ status: "accepted", approve: true, always: { grantMs: 30 * DAY } });
    expect(decisionNotice(result, "zh-TW")).toBe(
      "已確認，處理中…之後 30 天內，你在這裡使用這個工具不會再詢問（/permissions 可撤銷）。",
    );
    expect(decisions).toEqual([{ approvalId: id, verdict: "approved" }]);
    expect(await store.get(id)).toMatchObject({ status: "approved", always: true });
  });

  it("keeps alwaysAllow once, as a hash field; a record that also has it in its data reads by the field", async () => {
    const store = new ApprovalStore(redis, { timeoutMs: 60_000 });
    const id = await store.create(approval(true));
    const key = `approval:{approval}:${id}`;
    expect(await redis.hget(key, "alwaysAllow")).toBe("1");
    expect(JSON.parse((await redis.hget(key, "data"))!)).not.toHaveProperty("alwaysAllow");
    // a record written before: alwaysAllow in the data JSON too, the same as the field
    const old = await store.create(approval(false));
    const oldKey = `approval:{approval}:${old}`;
    await redis.hset(
      oldKey,
      "data",
      JSON.stringify({ ...JSON.parse((await redis.hget(oldKey, "data"))!), alwaysAllow: false }),
    );
    expect((await store.get(old))!.alwaysAllow).toBe(false);
    await redis.hset(
      oldKey,
      "alwaysAllow",
      "1",
      "data",
      JSON.stringify({ ...JSON.parse((await redis.hget(oldKey, "data"))!), alwaysAllow: true }),
    );
    expect((await store.get(old))!.alwaysAllow).toBe(true);
  });

  it("refuses a forged always where the prompt did not offer it, and leaves the approval open", async () => {
    const store = new ApprovalStore(redis, { timeoutMs: 60_000, grantMs: 30 * DAY });
    const id = await store.create(approval(false));
    const refused = await store.decide({
      approvalId: id,
      platform: "telegram",
      deciderId: "301",
      approve: true,
      always: true,
    });
    expect(refused).toEqual({ status: "always_refused" });
    expect(decisionNotice(refused, "en")).toBe("This action cannot be always allowed; press Confirm or Cancel.");
    expect(await store.get(id)).toMatchObject({ status: "pending", always: false });
    expect(await store.decide({ approvalId: id, platform: "telegram", deciderId: "301", approve: true })).toEqual({
      status: "accepted",
      approve: true,
    });
    expect(await store.get(id)).toMatchObject({ status: "approved", always: false });
  });

  it("an undone always decision (the queue failed) is pending again, without the always mark", async () => {
    const store = new ApprovalStore(redis, {
      timeoutMs: 60_000,
      onDecision: () => {
        throw new Error("queue down");
      },
    });
    const id = await store.create(approval(true));
    await expect(
      store.decide({ approvalId: id, platform: "telegram", deciderId: "301", approve: true, always: true }),
    ).rejects.toThrow("queue down");
    expect(await store.get(id)).toMatchObject({ status: "pending", always: false });
  });
});
