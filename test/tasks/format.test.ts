/**
 * The words and button data of scheduled tasks (`src/tasks/format.ts`): the occurrence's user
 * turn and header (late or not, in both locales), one task as a line, and task buttons that fit
 * Telegram's 64-byte `callback_data` and read back as they were written.
 */
import { describe, expect, it } from "vitest";
import {
  formatTask,
  occurrenceHeader,
  parseTaskButton,
  scheduledTurn,
  shortInstruction,
  taskButton,
} from "../../src/tasks/format.js";
import type { Task } from "../../src/tasks/store.js";

const ZONE = "Asia/Taipei";
const at = Date.UTC(2026, 11, 1, 23, 30); // 07:30 on 2 December in Taipei
const task: Task = {
  id: 3,
  instruction: "告訴我新竹的天氣",
  at,
  next: at,
  repeat: "weekdays",
  timezone: ZONE,
  chatId: "1",
  chatKind: "dm",
  userName: "Alice",
  createdAt: at - 1000,
  failures: 0,
};

describe("scheduled task words", () => {
  it("marks the user turn and cuts long instructions to one line", () => {
    expect(scheduledTurn(task)).toBe("[scheduled task] 告訴我新竹的天氣");
    expect(shortInstruction("a\n b   c")).toBe("a b c");
    expect([...shortInstruction("字".repeat(100), 10)]).toHaveLength(10);
    expect(shortInstruction("字".repeat(100), 10).endsWith("…")).toBe(true);
  });

  it("says how late an occurrence is only past a minute", () => {
    expect(occurrenceHeader(task, at, 30_000, "zh-TW")).toBe("📅 排程任務 #3");
    expect(occurrenceHeader(task, at, 5 * 60_000, "zh-TW")).toBe(
      "📅 排程任務 #3（晚了 5 分鐘：原定 2026年12月2日星期三 07:30，當時機器人沒有在執行）",
    );
    expect(occurrenceHeader(task, at, 2 * 3600_000, "en")).toBe(
      "📅 Scheduled task #3 (late by 2 hours: it was due Wednesday, December 2, 2026 at 07:30, while the bot was not running)",
    );
  });

  it("writes a task as a line: next time and repeat, or paused and why", () => {
    expect(formatTask(task, "zh-TW", ZONE)).toBe(
      "#3 告訴我新竹的天氣 — 2026年12月2日星期三 07:30（2026-12-02T07:30:00+08:00），每個工作日（週一到週五）",
    );
    expect(formatTask({ ...task, paused: { at, by: "owner" }, next: undefined }, "zh-TW", ZONE)).toBe(
      "#3 告訴我新竹的天氣 — 已暫停，每個工作日（週一到週五）",
    );
    expect(
      formatTask({ ...task, failures: 3, paused: { at, by: "failures", reason: "x" }, next: undefined }, "en", ZONE),
    ).toBe("#3 告訴我新竹的天氣 — paused after 3 failures in a row, weekdays (Mon-Fri)");
  });

  it("task buttons fit 64 bytes and read back; anything else is refused", () => {
    for (const userId of ["123456789", "736485920394857201", "chat:-1001234567890"]) {
      for (const action of ["p", "r", "c"] as const) {
        const data = taskButton(action, { platform: "telegram", userId }, 987654321);
        expect(Buffer.byteLength(data)).toBeLessThanOrEqual(64);
        expect(parseTaskButton(data)).toEqual({ action, userId, taskId: 987654321 });
      }
    }
    // A /tasks list's buttons say which list they are in: one person's (any action), a group's for its admins (cancel).
    for (const [action, view] of [
      ["p", "list"],
      ["r", "list"],
      ["c", "list"],
      ["c", "group"],
    ] as const) {
      const data = taskButton(action, { platform: "telegram", userId: "chat:-1001234567890" }, 987654321, view);
      expect(Buffer.byteLength(data)).toBeLessThanOrEqual(64);
      expect(parseTaskButton(data)).toEqual({ action, userId: "chat:-1001234567890", taskId: 987654321, view });
    }
    expect(parseTaskButton("tk:pg:1.2")).toBeUndefined();
    expect(parseTaskButton("tk:x:1.2")).toBeUndefined();
    expect(parseTaskButton("rm:c:1.2")).toBeUndefined();
    expect(parseTaskButton("tk:p:%zz.2")).toBeUndefined();
  });
});
