import { PassThrough } from "node:stream";
import { describe, expect, it } from "vitest";
import { createLogger } from "../../src/log.js";
import { FakeTelegram } from "../fakes/telegram.js";
import { startHarness } from "./harness.js";

describe("telegram logging", () => {
  it("logs failures without the bot token", async () => {
    const lines: string[] = [];
    const stream = new PassThrough();
    stream.on("data", (d: Buffer) => lines.push(...d.toString().split("\n").filter(Boolean)));
    const log = createLogger({ level: "debug", destination: stream, pretty: false });
    const tg = await FakeTelegram.start();
    tg.failNext("setMyCommands", { error_code: 400, description: "Bad Request: BOT_COMMAND_INVALID" });
    const h = await startHarness({}, tg, log);
    try {
      h.failEnqueue.on = true;
      const u = tg.user(5, "Eve");
      tg.sendUserMessage({ chat: tg.privateChat(u), from: u, text: "hello" });
      await tg.waitFor(() => tg.sent.find((s) => s.chatId === 5));
      await tg.waitFor(() => lines.some((l) => l.includes("could not queue a message")));
      expect(lines.some((l) => l.includes("setMyCommands failed"))).toBe(true);
      expect(lines.join("\n")).not.toContain(tg.token);
      expect(lines.join("\n")).not.toContain(tg.token.split(":")[1]!);
    } finally {
      await h.stop();
      await tg.stop();
    }
  });
});
