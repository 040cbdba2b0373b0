/**
 * "Always allow" in `npm run chat`: `a` answers an approval prompt with always allow, through the
 * real console adapter, queue, worker, approval store and grants on a real Redis and the strict
 * fake Messages API; `/permissions` lists the grant and `/permissions <tool>` revokes it.
 */
import { expect, it } from "vitest";
import { ToolBox } from "../../src/toolbox/toolbox.js";
import { testConfig } from "../helpers/config.js";
import { todoModel, todoTools, waitFor } from "../worker/harness.js";
import { useConsoleBot } from "./harness.js";

const start = useConsoleBot();

const WAIT = 15_000;

it("`a` approves with always allow; the next call runs without a prompt; /permissions lists it and /permissions <tool> revokes it", async () => {
  const { output, type } = await start({ config: testConfig({ ROLE: "all" }), fake: { fallback: todoModel } });
  const answers = () => output.answers();
  const prompts = () => answers().filter((a) => a.startsWith("⚠️ 需要確認"));
  const said = (text: string) => waitFor(() => answers().includes(text), WAIT, `"${text}"`);

  for (const item of ["tea", "milk", "rice"]) type(`add todo ${item}`);
  await said("ok: added #3: rice");
  type("delete todo 1");
  await waitFor(() => prompts().length === 1, WAIT, "the prompt");
  expect(prompts()[0]).toContain("請輸入 y（是）、n（否）或 a（一律允許：之後在這裡不再詢問這個工具）");
  type("a");
  await said("已確認，處理中…\n     之後 30 天內，你在這裡使用這個工具不會再詢問（/permissions 可撤銷）。");
  await said("ok: deleted #1: tea");
  await said('✅ 已確認，30 天內一律允許：delete_todo {"number":1}');

  type("delete todo 1");
  await said("ok: deleted #1: milk");
  expect(prompts()).toHaveLength(1);

  type("/permissions");
  await waitFor(() => answers().some((a) => a.startsWith("你在這裡「一律允許」的工具")), WAIT, "the /permissions list");
  const list = answers().find((a) => a.startsWith("你在這裡「一律允許」的工具"))!;
  expect(list).toMatch(
    /^你在這裡「一律允許」的工具（到期前不再詢問你）：\n• delete_todo — 到 .+\n\n撤銷：輸入 \/permissions <工具名稱>$/,
  );
  type("/permissions delete_todo");
  await said("已撤銷：之後使用 delete_todo 會再詢問你。");
  type("delete todo 1");
  await waitFor(() => prompts().length === 2, WAIT, "a new prompt");
  type("n");
  await said("已取消。");
  await waitFor(
    () => answers().some((a) => a.startsWith("ok:") && a.includes("declined")),
    WAIT,
    "the answer after cancel",
  );
}, 60_000);

it("`a` on a tool that refuses always allow says to type y or n (no buttons in a terminal), and the prompt stays open", async () => {
  const toolbox = new ToolBox(
    todoTools()
      .list()
      .map((tool) => (tool.name === "delete_todo" ? { ...tool, alwaysAllow: false } : tool)),
  );
  const { output, type } = await start({ config: testConfig({ ROLE: "all" }), fake: { fallback: todoModel }, toolbox });
  const answers = () => output.answers();
  const prompts = () => answers().filter((a) => a.startsWith("⚠️ 需要確認"));
  const said = (text: string) => waitFor(() => answers().includes(text), WAIT, `"${text}"`);

  type("add todo tea");
  await said("ok: added #1: tea");
  type("delete todo 1");
  await waitFor(() => prompts().length === 1, WAIT, "the prompt");
  expect(prompts()[0]).not.toContain("a（一律允許");
  type("a");
  await said("這個動作不能設為一律允許，請輸入 y（確認）或 n（取消）。");
  expect(answers().join("\n")).not.toMatch(/按「確認」|Confirm or Cancel/);
  type("y");
  await said("已確認，處理中…");
  await said("ok: deleted #1: tea");
}, 60_000);
