/**
 * `/forget` in the terminal chat (`npm run chat`), which has no buttons: it asks first, as the
 * `/memory` delete-all question does on the other platforms, and the next line answers it — `y`
 * erases (through the same press handler as the ⚠️ button), `n` keeps; any other line drops the
 * question, saying so before that line is handled, so a later `y` erases nothing. Nothing stored:
 * said so, with no question.
 */
import { expect, it } from "vitest";
import { memoryKey, MemoryStore } from "../../src/memory/store.js";
import { connectRedis } from "../../src/redis.js";
import { text } from "../fakes/anthropic.js";
import { testConfig } from "../helpers/config.js";
import { waitFor } from "../worker/harness.js";
import { useConsoleBot } from "./harness.js";

const start = useConsoleBot();

it("/forget asks; n keeps the files, another line drops the question (saying so), y erases", async () => {
  const { output, type, server, fake } = await start({ config: testConfig({ ROLE: "all", BOT_LOCALE: "zh-TW" }) });
  const redis = connectRedis(server.url);
  try {
    const answers = () => output.answers();
    const next = async (line: string) => {
      const before = answers().length;
      type(line);
      await waitFor(() => answers().length > before, 10_000, `the answer to ${line}`);
      return answers().slice(before).join("\n");
    };
    expect(await next("/forget")).toBe("沒有需要清除的記憶。");

    const scope = { kind: "personal" as const, platform: "console" as const, userId: "me" };
    const memory = new MemoryStore(redis);
    await memory.update(scope, () => ({
      files: new Map([
        ["/memories/home.md", "住在新竹"],
        ["/memories/food.md", "不吃香菜"],
      ]),
      result: undefined,
    }));
    const stored = async () => (await memory.read(scope)).map((f) => f.text).sort();
    const question = await next("/forget");
    expect(question).toMatch(
      /^確定要清除你的全部個人記憶（2 個檔案）嗎？清除後無法復原。\n\s*輸入 y 確定全部刪除，輸入 n 取消。$/,
    );
    expect(await stored()).toEqual(["不吃香菜", "住在新竹"]);
    expect(await next("n")).toBe("已取消，記憶沒有變更。");
    expect(await stored()).toEqual(["不吃香菜", "住在新竹"]);

    // A line other than y or n drops the question, saying so before it is handled: a later y is no answer to it.
    await next("/forget");
    const dropped = "（已取消清除記憶的詢問，沒有刪除任何東西。）";
    const until = async (line: string, last: (answer: string) => boolean) => {
      const before = answers().length;
      type(line);
      await waitFor(() => answers().slice(before).some(last), 10_000, `the answer to ${line}`);
      return answers().slice(before);
    };
    const afterMemory = await until("/memory", (a) => a.includes("住在新竹"));
    expect(afterMemory[0]).toBe(dropped);
    expect(afterMemory.slice(1).join("\n")).toContain("住在新竹");
    expect(afterMemory.filter((a) => a === dropped)).toHaveLength(1);
    expect(await next("y")).toBe("目前沒有等待確認的動作。");
    expect(await stored()).toEqual(["不吃香菜", "住在新竹"]);

    // A message for the model drops it too: said once, before the model's answer.
    await next("/forget");
    fake.enqueue(text("你好！"));
    expect(await until("你好", (a) => a === "你好！")).toEqual([dropped, "你好！"]);
    expect(await next("y")).toBe("目前沒有等待確認的動作。");
    expect(await stored()).toEqual(["不吃香菜", "住在新竹"]);

    await next("/forget");
    expect(await next("y")).toBe("已清除你的個人記憶（2 個檔案）。對話紀錄不受影響（要清除請用 /reset）。");
    expect(await redis.exists(memoryKey(scope))).toBe(0);
    expect(await next("/forget")).toBe("沒有需要清除的記憶。");
  } finally {
    await redis.quit();
  }
});
