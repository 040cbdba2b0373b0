/**
 * `npm run access` (its `accessMain`, in this process) against a real redis-server, with env lists
 * in its environment: revoking a chat looks at the chat list (`ALLOWED_CHATS`), revoking a user at
 * the user lists (`ADMIN_USERS`, `ALLOWED_USERS`); a grant is removed even when an env list also
 * names the entry, which is then said; `allow` of an env-listed user writes no grant; `allow-chat`
 * of a person is refused; an unknown command is named. `/disable` in a chat that both `/enable`
 * granted and `ALLOWED_CHATS` lists removes the grant and says the chat is still listed.
 */
import { beforeEach, describe, expect, it } from "vitest";
import type { AccessGate } from "../../src/access/gate.js";
import { AccessStore } from "../../src/access/store.js";
import { CORE_COMMANDS } from "../../src/commands/catalog.js";
import type { CommandInvocation, CommandServices } from "../../src/commands/command.js";
import { silentLogger } from "../../src/log.js";
import { testConfig } from "../helpers/config.js";
import { accessMain, unknownCommand } from "../../src/cli/access.js";
import type { RedisClient } from "../../src/redis.js";
import { runCli, type CliRun } from "../helpers/cli.js";
import { childEnv } from "../helpers/compiled.js";
import type { TestRedis } from "../helpers/redis.js";
import { useRedis } from "../helpers/use-redis.js";

let redis: RedisClient;
let server: TestRedis;
useRedis((r, s) => {
  redis = r;
  server = s;
});

/**
 * `npm run access -- ...args` with `telegram:7001` an admin, `telegram:7002` env-allowed, and
 * `telegram:-1007003` and the Discord channel `discord:555555555555555` env-allowed chats.
 */
function access(...args: string[]): Promise<CliRun> {
  return runCli(
    accessMain,
    args,
    childEnv({
      HOME: process.env.HOME,
      LOG_LEVEL: "silent",
      ...server.env,
      ADMIN_USERS: "telegram:7001",
      ALLOWED_USERS: "telegram:7002",
      ALLOWED_CHATS: "telegram:-1007003,discord:555555555555555",
    }),
  );
}

describe("npm run access with env lists", () => {
  let store: AccessStore;
  beforeEach(async () => {
    await redis.flushall();
    store = new AccessStore(redis);
  });

  it("revoke-chat of a granted chat whose id is an admin's (a user list) revokes it: user lists are not chat lists", async () => {
    // The tester's reproduction: allow-chat then revoke-chat of an id that is in ADMIN_USERS.
    await store.allowChat("telegram:7001");
    const revoke = await access("revoke-chat", "telegram:7001");
    expect(revoke).toEqual({ code: 0, stdout: "revoked telegram:7001\n", stderr: "" });
    expect(await store.grants()).toEqual({ users: [], chats: [] });
    const list = await access("list");
    expect(list.stdout).toContain("allowed chats (granted): (none)\n");
  });

  it("revoke of a granted user whose id is an env-allowed chat's revokes it: chat lists are not user lists", async () => {
    await store.allowUser("discord:555555555555555");
    expect(await access("revoke", "discord:555555555555555")).toEqual({
      code: 0,
      stdout: "revoked discord:555555555555555\n",
      stderr: "",
    });
  });

  it("revoke of a user both granted and in ADMIN_USERS removes the grant and says it still has access through ADMIN_USERS", async () => {
    await store.allowUser("telegram:7001");
    const revoke = await access("revoke", "telegram:7001");
    expect(revoke).toEqual({
      code: 0,
      stdout: "revoked the grant of telegram:7001\n",
      stderr:
        "telegram:7001 still has access through ADMIN_USERS in the environment (.env); remove it there and restart the bot\n",
    });
    expect(await store.hasUser("telegram:7001")).toBe(false);
    // Revoked again: nothing is granted; the env list is still named, and it is refused (exit 2) as before.
    expect(await access("revoke", "telegram:7001")).toEqual({
      code: 2,
      stdout: "",
      stderr:
        "telegram:7001 was not granted: it has access through ADMIN_USERS in the environment (.env); remove it there and restart the bot\n",
    });
  });

  it("revoke-chat of a chat both granted and in ALLOWED_CHATS removes the grant and names ALLOWED_CHATS", async () => {
    await store.allowChat("telegram:-1007003");
    const revoke = await access("revoke-chat", "telegram:-1007003");
    expect(revoke.code).toBe(0);
    expect(revoke.stdout).toBe("revoked the grant of telegram:-1007003\n");
    expect(revoke.stderr).toBe(
      "telegram:-1007003 still has access through ALLOWED_CHATS in the environment (.env); remove it there and restart the bot\n",
    );
    expect(await store.grants()).toEqual({ users: [], chats: [] });
  });

  it("allow of a user in ADMIN_USERS or ALLOWED_USERS says so and writes no grant", async () => {
    expect(await access("allow", "telegram:7001")).toEqual({
      code: 0,
      stdout: "telegram:7001 already has access through ADMIN_USERS in the environment (.env); no grant was written\n",
      stderr: "",
    });
    expect((await access("allow", "telegram:7002")).stdout).toBe(
      "telegram:7002 already has access through ALLOWED_USERS in the environment (.env); no grant was written\n",
    );
    expect((await access("allow-chat", "telegram:-1007003")).stdout).toBe(
      "telegram:-1007003 already has access through ALLOWED_CHATS in the environment (.env); no grant was written\n",
    );
    expect(await store.grants()).toEqual({ users: [], chats: [] });
    // Not env-listed: granted as before.
    expect(await access("allow", "telegram:7004")).toEqual({ code: 0, stdout: "allowed telegram:7004\n", stderr: "" });
    expect(await store.hasUser("telegram:7004")).toBe(true);
  });

  it("allow-chat of a person (a positive Telegram id, a LINE user id) is refused; a group's id is allowed", async () => {
    const person = await access("allow-chat", "telegram:7001");
    expect(person.code).toBe(2);
    expect(person.stderr).toBe(
      "telegram:7001 is a person, not a group (Telegram group ids are negative, e.g. telegram:-1001234567890): to let them in, use allow telegram:7001\n",
    );
    const lineUser = `line:U${"a".repeat(32)}`;
    const line = await access("allow-chat", lineUser);
    expect(line.code).toBe(2);
    expect(line.stderr).toContain(`${lineUser} is a person, not a group (LINE group ids start with C`);
    expect(await store.grants()).toEqual({ users: [], chats: [] });
    // A LINE group as a user is refused, as a Telegram group is.
    const lineGroup = `line:C${"b".repeat(32)}`;
    expect(await access("allow", lineGroup)).toEqual({
      code: 2,
      stdout: "",
      stderr: `${lineGroup} is a LINE group, not a user: use allow-chat / revoke-chat for it\n`,
    });
    expect((await access("allow-chat", lineGroup)).stdout).toBe(`allowed ${lineGroup}\n`);
    expect((await access("allow-chat", "telegram:-1009")).stdout).toBe("allowed telegram:-1009\n");
    // Discord ids do not tell a person from a channel: allowed.
    expect((await access("allow-chat", "discord:123456789012345678")).code).toBe(0);
    expect((await store.grants()).chats).toEqual(["discord:123456789012345678", lineGroup, "telegram:-1009"]);
    // A person's id granted as a chat before (as the tester did) can still be revoked.
    await store.allowChat("telegram:7005");
    expect((await access("revoke-chat", "telegram:7005")).stdout).toBe("revoked telegram:7005\n");
  });

  it("an unknown command is named, with the closest command when one is near, before the usage (exit 2)", async () => {
    const bogus = await access("bogus");
    expect(bogus.code).toBe(2);
    expect(bogus.stdout).toBe("");
    expect(bogus.stderr.split("\n").slice(0, 2)).toEqual([
      'unknown command "bogus"',
      "usage: npm run access -- <command>",
    ]);
    expect((await access("alow", "telegram:1")).stderr.split("\n")[0]).toBe(
      'unknown command "alow" (did you mean "allow"?)',
    );
    expect(unknownCommand("revoke_chat")).toBe('unknown command "revoke_chat" (did you mean "revoke-chat"?)');
    expect(unknownCommand("lst")).toBe('unknown command "lst" (did you mean "list"?)');
    expect(unknownCommand("\u001b[2Jx")).toBe('unknown command "[2Jx"');
    expect(unknownCommand("revoke-chat")).toBeUndefined();
    expect(await store.grants()).toEqual({ users: [], chats: [] });
  });
});

describe("/disable in a chat ALLOWED_CHATS lists", () => {
  /** `/disable` sent by an admin in the Telegram group `chatId`, with `telegram:-1007003` in ALLOWED_CHATS. */
  async function disable(chatId: string): Promise<string> {
    const services = {
      config: testConfig({ ADMIN_USERS: "telegram:7001", ALLOWED_CHATS: "telegram:-1007003" }),
      log: silentLogger,
      gate: { access: new AccessStore(redis) } as unknown as AccessGate,
    } as unknown as CommandServices;
    const inv = {
      name: "disable",
      args: "",
      platform: "telegram",
      chatId,
      chatKind: "group",
      userId: "7001",
      userName: "Owner",
      locale: "en",
    } as CommandInvocation;
    return (await CORE_COMMANDS.get("disable")!.run(inv, services)) as string;
  }

  it("removes the /enable grant and says the chat is still listed; without a grant it only says it is listed", async () => {
    await redis.flushall();
    const store = new AccessStore(redis);
    await store.allowChat("telegram:-1007003");
    expect(await disable("-1007003")).toBe(
      "Removed this chat's /enable, but it is still listed in ALLOWED_CHATS, so the bot still answers here: remove it from .env and restart.",
    );
    expect((await store.grants()).chats).toEqual([]);
    expect(await disable("-1007003")).toBe("This chat is listed in ALLOWED_CHATS; remove it from .env and restart.");
    await store.allowChat("telegram:-1009");
    expect(await disable("-1009")).toBe("Disabled here.");
    expect((await store.grants()).chats).toEqual([]);
  });
});
