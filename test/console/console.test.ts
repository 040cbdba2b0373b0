import { describe, expect, it } from "vitest";
import { splitText } from "../../adapters/console/index.js";
import type { DecisionRequest } from "../../src/approvals/decider.js";
import type { FakeAnthropic } from "../fakes/anthropic.js";
import { testConfig } from "../helpers/config.js";
import type { TestRedis } from "../helpers/redis.js";
import { todoModel, waitFor } from "../worker/harness.js";
import { useConsoleBot } from "./harness.js";

describe("splitText", () => {
  it("splits at paragraphs, keeps a code block whole, and never cuts a surrogate pair", () => {
    expect(splitText("one\n\ntwo\n\nthree", 8)).toEqual(["one\n\ntwo", "three"]);
    const code = "```\na\n\nb\n```";
    expect(splitText(`intro\n\n${code}\n\nend`, 14)).toEqual(["intro", code, "end"]);
    const emoji = "😀".repeat(5); // 10 UTF-16 units
    const parts = splitText(emoji, 5);
    expect(parts.join("")).toBe(emoji);
    for (const p of parts) expect(p.length).toBeLessThanOrEqual(5);
    expect(parts.every((p) => !/[\uD800-\uDBFF]$/.test(p))).toBe(true);
    expect(splitText("  \n\n  ", 10)).toEqual([]);
  });
});

describe("console adapter through queue, worker and history", () => {
  const startStack = useConsoleBot();
  let server: TestRedis | undefined;
  let fake: FakeAnthropic | undefined;

  async function start() {
    const decisions: DecisionRequest[] = [];
    const stack = await startStack({
      config: testConfig({ ROLE: "all" }),
      decider: () => ({
        async decide(request) {
          decisions.push(request);
          return { status: "accepted", approve: request.approve };
        },
      }),
    });
    ({ server, fake } = stack);
    return { ...stack, decisions };
  }

  it("answers lines in order, remembers them, and /reset forgets", async () => {
    const { output, type } = await start();
    fake!.enqueue(todoModel, todoModel, todoModel, todoModel, todoModel);
    type("add todo tea");
    type("list todos");
    await waitFor(() => output.answers().length === 2, 10_000, "two answers");
    expect(output.answers()).toEqual(["ok: added #1: tea", "ok: #1 tea"]);
    expect(fake!.requests[2]!.messages).toHaveLength(5); // the first exchange (4) + the new user turn
    type("/reset");
    await waitFor(() => output.answers().length === 3);
    expect(output.answers()[2]).toBe("好的，我已經忘掉這個聊天之前的對話了。");
    type("hello again");
    await waitFor(() => output.answers().length === 4);
    const last = fake!.requests[fake!.requests.length - 1]!.messages;
    expect(last).toHaveLength(1);
    expect(JSON.stringify(last[0]!.content)).toContain("hello again");
  });

  it("answers /help and /tools itself, without the model", async () => {
    const { output, type } = await start();
    type("/help");
    type("/tools");
    await waitFor(() => output.answers().length === 2);
    expect(output.answers()[0]).toContain("/reset");
    expect(output.answers()[0]).toContain("/quit");
    // Plain text in the terminal: no Markdown markers.
    expect(output.answers()[1]).toContain("- add_todo — Add an item");
    expect(output.answers()[1]).toContain("⚠️ delete_todo");
    expect(output.answers()[1]).toContain("\ntodo\n");
    expect(output.answers()[1]).not.toMatch(/[`*]/);
    expect(fake!.requests).toHaveLength(0);
  });

  it("answers an unknown /command with the list of commands, without the model", async () => {
    const { output, type } = await start();
    type("/weather 台北");
    await waitFor(() => output.answers().length === 1);
    expect(output.answers()[0]).toMatch(/^不認得的指令 \/weather。可用的指令：/);
    for (const name of ["/help", "/tools", "/reset", "/usage", "/quit"]) expect(output.answers()[0]).toContain(name);
    // The same commands /help lists (the console user is an admin): /approve, /enable, /disable too.
    type("/help");
    await waitFor(() => output.answers().length === 2);
    const listed = [...output.answers()[1]!.matchAll(/^- \/([a-z_]+)/gm)].map((m) => `/${m[1]}`);
    expect(listed).toEqual([
      "/help",
      "/tools",
      "/reset",
      "/stop",
      "/context",
      "/compact",
      "/settings",
      "/persona",
      "/model",
      "/reminders",
      "/tasks",
      "/permissions",
      "/memory",
      "/forget",
      "/usage",
      "/approve",
      "/enable",
      "/disable",
    ]);
    expect(output.answers()[0]).toBe(`不認得的指令 /weather。可用的指令：${[...listed, "/quit"].join(" ")}`);
    // A bare `/` gets the list alone; a path is a message like any other.
    type("/");
    await waitFor(() => output.answers().length === 3);
    expect(output.answers()[2]).toBe(`可用的指令：${[...listed, "/quit"].join(" ")}`);
    expect(fake!.requests).toHaveLength(0);
  });

  it("`//` and a line of slashes get the list; `/help@somebot` is /help; a path goes to the model", async () => {
    const { output, type } = await start();
    fake!.enqueue(todoModel);
    type("/");
    await waitFor(() => output.answers().length === 1);
    const list = output.answers()[0]!;
    expect(list).toMatch(/^可用的指令：\/help /);
    type("//");
    type("/ / /");
    type("//help");
    await waitFor(() => output.answers().length === 4);
    expect(output.answers().slice(1)).toEqual([list, list, list]);
    type("/help@somebot");
    type("/HELP@Some_Bot extra");
    await waitFor(() => output.answers().length === 6);
    for (const help of output.answers().slice(4)) expect(help).toMatch(/- \/reset [\s\S]*在這個終端機：\/quit 離開/);
    type("/weather@somebot 台北");
    await waitFor(() => output.answers().length === 7);
    expect(output.answers()[6]).toMatch(/^不認得的指令 \/weather。可用的指令：/);
    expect(fake!.requests).toHaveLength(0);
    type("/usr/bin is where?");
    await waitFor(() => output.answers().length === 8);
    expect(output.answers()[7]).toBe("echo: /usr/bin is where?");
    expect(fake!.requests).toHaveLength(1);
  });

  it.each(["/quit@somebot", "/EXIT@x now"])(
    "`%s` leaves as `/quit` does (the `@…` suffix dropped, as for /help)",
    async (line) => {
      const { adapter, output, type } = await start();
      let closed = false;
      void adapter.closed.then(() => (closed = true));
      type(line);
      await waitFor(() => closed, 10_000, `${line} to end the input`);
      expect(output.answers()).toEqual([]);
    },
  );

  it("/help shows /permissions [tool] and speaks of no buttons the console lacks", async () => {
    const { output, type } = await start();
    type("/help");
    await waitFor(() => output.answers().length === 1);
    const help = output.answers()[0]!;
    expect(help).toContain("- /permissions [tool] — 你在這裡「一律允許」的工具；加上工具名稱即可撤銷");
    expect(help).not.toContain("[revoke]");
    expect(help).not.toMatch(/revoke buttons|cancel buttons/);
  });

  it("/help describes only the tools offered (no weather without the weather tool)", async () => {
    const { output, type } = await start();
    type("/help");
    await waitFor(() => output.answers().length === 1);
    expect(output.answers()[0]).toContain("幫我記下");
    expect(output.answers()[0]).not.toMatch(/天氣|下雨/);
    expect(output.answers()[0]).not.toMatch(/[`*]/);
  });

  it("sends y/n to the open approval prompt's decider", async () => {
    const { adapter, output, type, decisions } = await start();
    type("n");
    await waitFor(() => output.answers().length === 1);
    expect(output.answers()[0]).toBe("目前沒有等待確認的動作。");
    const to = {
      conversation: { platform: "console" as const, chatId: "local" },
      chatKind: "dm" as const,
      replyTo: "m",
    };
    await adapter.outbound.sendApprovalPrompt(to, {
      approvalId: "ap1",
      action: "刪除待辦 #1「tea」",
      requesterName: "Me",
      expiresAt: Date.now() + 60_000,
    });
    type("y");
    await waitFor(() => decisions.length === 1);
    expect(decisions[0]).toEqual({ approvalId: "ap1", platform: "console", deciderId: "me", approve: true });
    await waitFor(() => output.answers().some((a) => a === "已確認，處理中…"));
    expect(output.answers().join("\n")).toContain("刪除待辦 #1「tea」");
  });

  it("says try again when the queue is unreachable, and goes on after", async () => {
    const { output, type } = await start();
    fake!.enqueue(todoModel);
    const outage = server!.restart(1500);
    await new Promise((r) => setTimeout(r, 100));
    type("are you there");
    await waitFor(() => output.answers().length === 1, 10_000);
    expect(output.answers()[0]).toBe("訊息沒有送出（暫時連不上佇列），請再試一次。");
    await outage;
    await waitFor(
      async () => {
        type("again");
        await new Promise((r) => setTimeout(r, 200));
        return output.answers().includes("echo: again");
      },
      10_000,
      "an answer after the outage",
    );
  });
});
