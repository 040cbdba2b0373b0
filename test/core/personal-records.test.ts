/**
 * The store of numbered personal records (reminders, scheduled tasks) on real Redis, with records
 * Redis' Lua `cjson` cannot decode: the escape of a lone UTF-16 surrogate (`\ud800`), which
 * `JSON.stringify` writes and JavaScript reads. Adding a record never decodes one in Lua, and a
 * stored one that holds such an escape still counts toward the limit of active records.
 */
import { describe, expect, it } from "vitest";
import { addReminder, listReminders, reminderKeys } from "../../src/reminders/store.js";
import { addTask, getTask, taskKeys } from "../../src/tasks/store.js";
import type { RedisClient } from "../../src/redis.js";
import { useRedis } from "../helpers/use-redis.js";

const ZONE = "Asia/Taipei";
const AT = Date.parse("2030-01-01T00:00:00Z");

/** A reminder's fields (without its id), due at {@link AT}. */
const reminder = (text: string) => ({
  text,
  at: AT,
  next: AT,
  timezone: ZONE,
  chatId: "1",
  chatKind: "dm" as const,
  userName: "Alice",
  createdAt: AT - 60_000,
});

describe("personal records", () => {
  let redis: RedisClient;
  useRedis((connection) => (redis = connection));

  it("a record whose fields hold a lone surrogate is added, stored well-formed and read back", async () => {
    const owner = { platform: "line" as const, userId: "U1" };
    const fields = {
      instruction: "sum up \ud800 the news",
      at: AT,
      next: AT,
      timezone: ZONE,
      chatId: "C1",
      chatKind: "group" as const,
      userName: "Bo\udc00b",
      createdAt: AT - 60_000,
    };
    const added = await addTask(redis, owner, fields, 5);
    expect(added).toEqual({
      id: 1,
      ...fields,
      instruction: "sum up \ufffd the news",
      userName: "Bo\ufffdb",
      failures: 0,
    });
    const stored = (await redis.hget(taskKeys(owner).items, "1"))!;
    expect(stored.startsWith('{"id":1,"instruction":')).toBe(true);
    expect(stored).not.toMatch(/\\u[dD][89a-fA-F]/);
    expect(await getTask(redis, owner, 1)).toEqual(added);
    // The next one gets the next id, its fields as JSON wrote them.
    const next = await addTask(redis, owner, { ...fields, instruction: "again" }, 5);
    expect(next?.id).toBe(2);
    expect(JSON.parse((await redis.hget(taskKeys(owner).items, "2"))!)).toEqual({ ...next, failures: 0 });
  });

  it("a stored active record holding a lone surrogate's escape counts toward the limit; a damaged one does not", async () => {
    const owner = { platform: "telegram" as const, userId: "7" };
    const items = reminderKeys(owner).items;
    // Written by another writer: JSON.stringify escapes the lone halves (`\ud800`), which cjson refuses.
    await redis.hset(
      items,
      "1",
      JSON.stringify({ id: 1, ...reminder("water \ud800 the plants"), userName: "Al\udc00ice" }),
    );
    await redis.hset(items, "2", '{"id":2,"text":"not json');
    await redis.set(reminderKeys(owner).seq, "2");
    expect(await addReminder(redis, owner, reminder("one more"), 1)).toBeUndefined();
    const second = await addReminder(redis, owner, reminder("one more"), 2);
    expect(second).toMatchObject({ id: 3, text: "one more", userName: "Alice" });
    expect((await listReminders(redis, owner)).map((r) => [r.id, r.text])).toEqual([
      [1, "water \ufffd the plants"],
      [3, "one more"],
    ]);
  });
});
