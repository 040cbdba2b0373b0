import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startHarness, type Harness } from "./harness.js";

let h: Harness;
beforeAll(async () => {
  h = await startHarness();
});
afterAll(async () => {
  await h?.stop();
});

const alice = { id: "700000000000000001", username: "alice", global_name: "Alice" };

describe("discord adapter", () => {
  it("connects through the gateway and registers guild commands", async () => {
    expect(h.fake.readySessions).toBe(1);
    expect(h.fake.identifies[0]).toMatchObject({ token: "[valid]", intents: 1 | (1 << 9) | (1 << 15) | (1 << 12) | (1 << 10) | (1 << 13) });
    const reg = await h.fake.waitFor(() => h.fake.commandRegistrations[0]);
    expect(reg.scope).toBe(h.fake.guildId);
  });

  it("queues a DM", async () => {
    const m = h.fake.sendUserMessage(alice, "明天會下雨嗎？", { dm: true });
    const job = await h.fake.waitFor(() => h.enqueued.find((e) => e.messageId === m.id));
    expect(job).toMatchObject({ platform: "discord", chatKind: "dm", chatId: m.channel_id, userId: alice.id, userName: "Alice", text: "明天會下雨嗎？" });
  });
});
