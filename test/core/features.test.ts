/**
 * Issue 37 item 1: the feature list and what the hubs ask of it — buttons routed by prefix, the
 * conversation stores a move carries, the keys `/reset` clears.
 */
import { describe, expect, it } from "vitest";
import { buttonKind } from "../../src/buttons.js";
import { conversationStores } from "../../src/conversations/migrate.js";
import type { Feature } from "../../src/feature.js";
import { checkFeatures, FEATURES, startFeatures } from "../../src/features.js";
import { silentLogger } from "../../src/log.js";
import { captureLogger } from "../helpers/log.js";
import { startWorkerSides } from "../../src/worker/worker.js";
import { testConfig } from "../helpers/config.js";
import { conversationKeys } from "../../src/queue/keys.js";

describe("the feature list", () => {
  it("holds the six features of issue 37 and Stop (issue 42) in order, each named once (a feature added joins them)", () => {
    const names = FEATURES.map((f) => f.name);
    const known = ["stop", "compaction", "settings", "reminders", "tasks", "approvals", "memory"];
    expect(names.filter((n) => known.includes(n))).toEqual(known);
    expect(new Set(names).size).toBe(names.length);
  });

  it("routes each button prefix to its feature, and anything else to none", () => {
    expect(buttonKind("ap:Ab3dE5gH:y")).toBe("approvals");
    expect(buttonKind("sp:Ab3dE5gHiJkL")).toBe("stop");
    expect(buttonKind("pm:x")).toBe("approvals");
    expect(buttonKind("rm:d:42.1")).toBe("reminders");
    expect(buttonKind("tk:p:x")).toBe("tasks");
    expect(buttonKind("st:l:en")).toBe("settings");
    expect(buttonKind("mm:all")).toBe("memory");
    expect(buttonKind("zz:1")).toBe("unknown");
  });

  it("refuses two features claiming one prefix or one command, or one name twice", () => {
    const a: Feature = { name: "a", buttons: { prefixes: ["x:"], press: async () => ({ kind: "a", notice: "" }) } };
    const b: Feature = { name: "b", buttons: { prefixes: ["x:y"], press: async () => ({ kind: "b", notice: "" }) } };
    expect(() => checkFeatures([a, b])).toThrow(/both claim the button prefix/);
    expect(() => checkFeatures([a, { name: "a" }])).toThrow(/two features are named "a"/);
    const c = {
      name: "c",
      commands: [{ name: "x", description: { "zh-TW": "x", en: "x" }, access: "everyone" as const, run: () => "" }],
    };
    expect(() => checkFeatures([c, { ...c, name: "d" }])).toThrow(/both define the command \/x/);
  });

  it("moves the core's stores, then every feature's, on a conversation move", () => {
    expect(conversationStores(FEATURES).map((s) => s.name)).toEqual([
      "history",
      "reset generation",
      "drafts-off",
      "access chats",
      "compaction archive",
      "settings",
      "reminders",
      "tasks",
      "grants",
      "group memory",
    ]);
  });

  it("clears the compaction archive with the history on /reset, and keeps the settings", () => {
    const chat = { platform: "telegram" as const, chatId: "-100" };
    const keys = FEATURES.flatMap((f) => f.conversation?.reset?.(chat) ?? []);
    expect(keys).toEqual([conversationKeys(chat).archive]);
  });

  it("asks the started features, in list order, what /reset closes: each one's line, none from one that throws (logged)", async () => {
    const asked: string[] = [];
    const teller = (name: string, line?: string, fails = false): Feature => ({
      name,
      start: () => ({
        state: undefined,
        beforeReset: async (conversation, place) => {
          asked.push(`${name} ${conversation.platform}:${conversation.chatId} ${place.promptsStayAsSent}`);
          if (fails) throw new Error("Connection is closed.");
          return line ? { "zh-TW": `${line}（中文）`, en: line } : undefined;
        },
      }),
    });
    const { log, lines } = captureLogger("warn");
    const parts = { config: testConfig(), log, redis: {} as never, history: {} as never };
    const running = await startFeatures(
      [teller("a", "first"), teller("b"), teller("c", "never", true), teller("d", "last"), { name: "e" }],
      parts,
    );
    const chat = { platform: "line" as const, chatId: "U1" };
    expect(await running.beforeReset(chat, { promptsStayAsSent: true }, log)).toEqual([
      { "zh-TW": "first（中文）", en: "first" },
      { "zh-TW": "last（中文）", en: "last" },
    ]);
    expect(asked).toEqual(["a line:U1 true", "b line:U1 true", "c line:U1 true", "d line:U1 true"]);
    expect(lines.map((l) => JSON.parse(l) as { feature?: string; msg: string })).toEqual([
      expect.objectContaining({ feature: "c", msg: "could not tell what /reset closes; its reply does not say it" }),
    ]);
  });

  it("says which features lend the core and the answers what (nothing per feature in app.ts or WorkerDeps)", () => {
    expect(FEATURES.filter((f) => f.worker).map((f) => f.name)).toEqual([
      "stop",
      "compaction",
      "settings",
      "approvals",
    ]);
  });

  it("refuses two features lending the same part, on either side, and closes what started", async () => {
    const closed: string[] = [];
    const lender = (name: string): Feature => ({
      name,
      start: () => ({
        state: undefined,
        lends: { languageOf: async () => undefined },
        close: async () => void closed.push(name),
      }),
      worker: () => ({ lends: { stops: {} as never }, close: async () => void closed.push(`worker ${name}`) }),
    });
    const parts = { config: testConfig(), log: silentLogger, redis: {} as never, history: {} as never };
    await expect(startFeatures([lender("a"), lender("b")], parts)).rejects.toThrow(
      /features "a" and "b" both lend the core's languageOf/,
    );
    expect(closed).toEqual(["b", "a"]);
    expect(() =>
      startWorkerSides([lender("a"), lender("b")], {
        ...parts,
        bullRedis: {} as never,
        toolbox: {} as never,
        client: {} as never,
      }),
    ).toThrow(/features "a" and "b" both lend the answers' stops/);
    await new Promise((r) => setImmediate(r));
    expect(closed).toEqual(["b", "a", "worker b", "worker a"]);
  });
});
