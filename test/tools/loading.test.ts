import { describe, expect, it } from "vitest";
import { inputSchemaOf } from "../../src/toolbox/schema.js";
import { testConfig } from "../helpers/config.js";
import { loadShippedTools, SHIPPED_TOOLS } from "./load.js";

describe("loading the shipped tools (what `npm run tools` shows)", () => {
  it("lists every shipped tool with a CWA key", async () => {
    const { toolbox, skipped } = await loadShippedTools(testConfig({ CWA_API_KEY: "CWA-TEST-KEY-0123456789" }));
    expect(toolbox.names()).toEqual(expect.arrayContaining(SHIPPED_TOOLS));
    expect(skipped).toEqual([]);
  });

  it("lists the others without a key and skips get_weather with the reason", async () => {
    const { toolbox, skipped } = await loadShippedTools(testConfig({ CWA_API_KEY: "" }));
    expect(toolbox.names()).toEqual(expect.arrayContaining(SHIPPED_TOOLS.filter((n) => n !== "get_weather")));
    expect(toolbox.names()).not.toContain("get_weather");
    expect(skipped).toEqual([
      {
        name: "get_weather",
        file: "tools/get_weather.ts",
        reason: "CWA_API_KEY is not set (get a free key at https://opendata.cwa.gov.tw)",
      },
    ]);
  });

  it("gives every shipped tool a status line of its own in both languages, never its bare name", async () => {
    const { toolbox } = await loadShippedTools(testConfig({ CWA_API_KEY: "CWA-TEST-KEY-0123456789" }));
    const inputs: Record<string, unknown> = {
      add_todo: { title: "買牛奶" },
      calculate: { expression: "6*7" },
      cancel_reminder: { reminder_id: 3 },
      cancel_task: { task_id: 2 },
      complete_todo: { todo_id: 4 },
      delete_todo: { todo_id: 5 },
      get_current_datetime: {},
      get_weather: { city: "臺北市" },
      list_reminders: {},
      list_tasks: {},
      list_todos: {},
      schedule_task: { instruction: "告訴我天氣", at: "2026-12-24T07:30" },
      set_reminder: { text: "繳電費", at: "2026-12-24T08:00" },
    };
    for (const name of [...SHIPPED_TOOLS, "cancel_task", "list_tasks", "schedule_task"]) {
      for (const locale of ["zh-TW", "en"] as const)
        expect(toolbox.activity(name, inputs[name], locale), `${name} (${locale})`).not.toBe(name);
    }
    expect(toolbox.activity("delete_todo", { todo_id: 5 }, "zh-TW")).toBe("刪除待辦 #5");
    expect(toolbox.activity("set_reminder", { at: "2026-12-24T08:00", todo_id: 1 }, "en")).toBe("Setting a reminder");
    expect(toolbox.activity("schedule_task", { instruction: "告訴我天氣", at: "2026-12-24T07:30" }, "zh-TW")).toBe(
      "排程任務：告訴我天氣",
    );
  });

  it("declares tags, danger and well-formed JSON Schemas", async () => {
    const { toolbox } = await loadShippedTools(testConfig({ CWA_API_KEY: "CWA-TEST-KEY-0123456789" }));
    const summary = Object.fromEntries(
      toolbox.list().map((t) => [t.name, { tags: [...t.tags], dangerous: t.dangerous }]),
    );
    expect(summary).toMatchObject({
      add_todo: { tags: ["todo", "write"], dangerous: false },
      calculate: { tags: ["util"], dangerous: false },
      complete_todo: { tags: ["todo", "write"], dangerous: false },
      delete_todo: { tags: ["todo", "write"], dangerous: true },
      get_current_datetime: { tags: ["info", "daily"], dangerous: false },
      get_weather: { tags: ["info", "daily"], dangerous: false },
      list_todos: { tags: ["todo"], dangerous: false },
    });
    const schemas = Object.fromEntries(toolbox.list().map((t) => [t.name, inputSchemaOf(t)]));
    for (const schema of Object.values(schemas)) {
      expect(schema.type).toBe("object");
      expect(schema.properties).toBeTypeOf("object");
    }
    expect(schemas.add_todo!.required).toEqual(["title"]);
    expect(Object.keys(schemas.add_todo!.properties!)).toEqual(["title", "due"]);
    expect(schemas.calculate!.required).toEqual(["expression"]);
    expect(schemas.complete_todo!.required).toEqual(["todo_id"]);
    expect(schemas.complete_todo!.properties!.todo_id).toMatchObject({ type: "integer" });
    expect(schemas.delete_todo!.required).toEqual(["todo_id"]);
    expect(schemas.list_todos!.required ?? []).toEqual([]);
    expect(schemas.list_todos!.properties!.include_completed).toMatchObject({ type: "boolean", default: false });
    expect(schemas.get_weather!.required ?? []).toEqual([]);
    expect(schemas.get_current_datetime!.required ?? []).toEqual([]);
  });

  it("tells the model when to use each tool and when not", async () => {
    const { toolbox } = await loadShippedTools(testConfig({ CWA_API_KEY: "CWA-TEST-KEY-0123456789" }));
    const description = (name: string) => toolbox.get(name)!.description;
    expect(description("delete_todo")).toContain("cannot be undone");
    expect(description("delete_todo")).toContain("use complete_todo instead");
    expect(description("complete_todo")).toContain("never deleted");
    expect(description("get_weather")).toContain("Only Taiwan's counties and cities are covered");
    expect(description("get_weather")).toContain("do not use it for places outside Taiwan");
    expect(description("calculate")).toContain("Not for units");
  });
});
