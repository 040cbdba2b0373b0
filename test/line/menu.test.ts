/**
 * `npm run line:menu` (`src/cli/line-menu.ts`, `adapters/line/menu.ts`) against the strict fake
 * LINE platform (rich menu objects checked against LINE's OpenAPI description and its documented
 * limits, the picture checked for format and size): the menu is created with its picture, set as
 * every user's default, and a second run replaces the first menu.
 */
import { mkdtemp, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import sharp from "sharp";
import { afterAll, beforeAll, expect, it } from "vitest";
import { createClients } from "../../adapters/line/api.js";
import { RICH_MENU_NAME, richMenuRequest } from "../../adapters/line/menu.js";
import type { CliIo } from "../../src/cli/io.js";
import { lineMenuMain } from "../../src/cli/line-menu.js";
import { checkLineRequest } from "../fakes/line-spec.js";
import { FakeLine } from "../fakes/line.js";
import { testConfig } from "../helpers/config.js";

let line: FakeLine;

beforeAll(async () => {
  line = await FakeLine.start();
});

afterAll(async () => {
  await line.stop();
});

/** Runs `npm run line:menu -- …argv` against the fake; returns the exit code and what it wrote. */
async function run(argv: string[], env: Record<string, string> = {}) {
  const out: string[] = [];
  const err: string[] = [];
  const io: CliIo = { out: (t) => out.push(t), err: (t) => err.push(t) };
  const code = await lineMenuMain(
    argv,
    {
      LOG_LEVEL: "silent",
      LINE_CHANNEL_SECRET: line.secret,
      LINE_CHANNEL_ACCESS_TOKEN: line.token,
      LINE_API_URL: line.apiUrl,
      LINE_DATA_API_URL: line.dataUrl,
      ...env,
    },
    io,
  );
  return { code, out: out.join("\n"), err: err.join("\n") };
}

it("creates the rich menu with its picture and makes it every user's default; a second run replaces it", async () => {
  const first = await run([]);
  expect(first.err).toBe("");
  expect(first.code).toBe(0);
  const id = line.defaultRichMenuId!;
  expect(first.out).toContain(id);
  const { menu, image } = line.richMenus.get(id)!;
  expect(menu).toMatchObject({ name: RICH_MENU_NAME, chatBarText: "選單", size: { width: 2500, height: 843 } });
  const areas = menu.areas as { action: { type: string; label: string; text: string } }[];
  expect(areas.map((a) => a.action.text)).toEqual(["/help", "/reminders", "/tasks", "/memory", "/settings", "/usage"]);
  expect(areas[0]!.action).toEqual({ type: "message", label: "說明", text: "/help" });
  expect(image?.type).toBe("image/png");
  expect(await sharp(image!.bytes).metadata()).toMatchObject({ width: 2500, height: 843, format: "png" });

  const second = await run([]);
  expect(second.code).toBe(0);
  expect(second.out).toContain("1 earlier menu deleted");
  expect(line.defaultRichMenuId).not.toBe(id);
  expect([...line.richMenus.keys()]).toEqual([line.defaultRichMenuId]);
  expect(line.takeSpecViolations()).toEqual([]);
});

it("takes a designed picture of the right size, refuses one of another size before calling LINE", async () => {
  const dir = await mkdtemp(path.join(tmpdir(), "line-menu-"));
  const good = path.join(dir, "menu.jpg");
  await writeFile(
    good,
    await sharp({ create: { width: 2500, height: 843, channels: 3, background: "#06c755" } })
      .jpeg()
      .toBuffer(),
  );
  const ok = await run(["--image", good], { BOT_LOCALE: "en" });
  expect(ok.code).toBe(0);
  const { menu, image } = line.richMenus.get(line.defaultRichMenuId!)!;
  expect(image?.type).toBe("image/jpeg");
  expect(menu.chatBarText).toBe("Menu");

  const wrong = path.join(dir, "small.png");
  await writeFile(
    wrong,
    await sharp({ create: { width: 1200, height: 405, channels: 3, background: "#000" } })
      .png()
      .toBuffer(),
  );
  const calls = line.calls.length;
  const refused = await run(["--image", wrong]);
  expect(refused.code).toBe(1);
  expect(refused.err).toContain("2500 × 843");
  expect(line.calls.length).toBe(calls);
  expect((await run(["--image"])).code).toBe(2);
  expect((await run([], { LINE_CHANNEL_ACCESS_TOKEN: "" })).code).toBe(2);
});

it("the fake refuses as LINE does: a menu missing fields or with a long chat bar text, a picture to the API host, a default with no picture", async () => {
  const create = (body: unknown) =>
    checkLineRequest({ host: "api", method: "POST", path: "/v2/bot/richmenu", query: new URLSearchParams(), body });
  expect(create(richMenuRequest("zh-TW")).ok).toBe(true);
  const { chatBarText: _drop, ...noBar } = richMenuRequest("zh-TW");
  expect(create(noBar).ok).toBe(false);
  expect(create({ ...richMenuRequest("zh-TW"), chatBarText: "x".repeat(15) }).ok).toBe(false);
  expect(
    checkLineRequest({
      host: "api",
      method: "POST",
      path: "/v2/bot/richmenu/richmenu-1/content",
      query: new URLSearchParams(),
      body: undefined,
      binary: true,
    }).ok,
  ).toBe(false);
  const clients = createClients(
    testConfig({
      LINE_CHANNEL_SECRET: line.secret,
      LINE_CHANNEL_ACCESS_TOKEN: line.token,
      LINE_API_URL: line.apiUrl,
      LINE_DATA_API_URL: line.dataUrl,
    }),
  );
  const { richMenuId } = await clients.api.createRichMenu(richMenuRequest("zh-TW"));
  await expect(clients.api.setDefaultRichMenu(richMenuId)).rejects.toMatchObject({ status: 400 });
  await clients.api.deleteRichMenu(richMenuId);
});
