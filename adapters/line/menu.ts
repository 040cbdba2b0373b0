/**
 * The bot's LINE rich menu (`npm run line:menu`, `src/cli/line-menu.ts`): the menu under the
 * message box of a one-to-one chat (LINE shows rich menus only there), six tappable areas that
 * each send a command as the user's own message (`/help`, `/reminders`, `/tasks`, `/memory`,
 * `/settings`, `/usage`), so the commands work as when typed. Optional: commands as text work
 * without it.
 *
 * Creating it: `POST /v2/bot/richmenu` (the areas), `POST /v2/bot/richmenu/{richMenuId}/content`
 * on the data host (the picture: PNG or JPEG of exactly the menu's size, at most 1 MB), then
 * `POST /v2/bot/user/all/richmenu/{richMenuId}` (the default menu of every user); menus this
 * command created before (same {@link RICH_MENU_NAME}) are deleted afterwards, so running it again
 * replaces the menu. Sources: https://developers.line.biz/en/reference/messaging-api/#rich-menu
 * and https://developers.line.biz/en/docs/messaging-api/using-rich-menus/ (size 2500 × 843 for a
 * compact menu; `chatBarText` at most 14 characters; an action's `label` at most 20).
 */
import type { messagingApi } from "@line/bot-sdk";
import sharp from "sharp";
import { localize, type Locale } from "../../src/i18n.js";
import type { Logger } from "../../src/log.js";
import { lineCall, type LineClients } from "./api.js";

/** The name every menu this command creates has (not shown to users): how an older one is found. */
export const RICH_MENU_NAME = "taiwan-tool-bot commands";
/** The menu's size in px (LINE's compact size). */
export const RICH_MENU_SIZE = { width: 2500, height: 843 } as const;
/** Largest picture LINE accepts, in bytes. */
export const RICH_MENU_IMAGE_LIMIT_BYTES = 1024 * 1024;

/** One area of the menu: the command it sends and its label. */
interface MenuItem {
  command: string;
  label: { "zh-TW": string; en: string };
}

const ITEMS: readonly MenuItem[] = [
  { command: "/help", label: { "zh-TW": "說明", en: "Help" } },
  { command: "/reminders", label: { "zh-TW": "提醒", en: "Reminders" } },
  { command: "/tasks", label: { "zh-TW": "排程任務", en: "Tasks" } },
  { command: "/memory", label: { "zh-TW": "記憶", en: "Memory" } },
  { command: "/settings", label: { "zh-TW": "設定", en: "Settings" } },
  { command: "/usage", label: { "zh-TW": "用量", en: "Usage" } },
];
const COLUMNS = 3;
const ROWS = 2;

/** The area (px) of item `index` in the 3 × 2 grid; the last column and row take the remainder. */
function boundsOf(index: number): { x: number; y: number; width: number; height: number } {
  const column = index % COLUMNS;
  const row = Math.floor(index / COLUMNS);
  const width = Math.floor(RICH_MENU_SIZE.width / COLUMNS);
  const height = Math.floor(RICH_MENU_SIZE.height / ROWS);
  return {
    x: column * width,
    y: row * height,
    width: column === COLUMNS - 1 ? RICH_MENU_SIZE.width - column * width : width,
    height: row === ROWS - 1 ? RICH_MENU_SIZE.height - row * height : height,
  };
}

/** The rich menu object (`RichMenuRequest`): six message actions in `locale`, shown open (`selected`). */
export function richMenuRequest(locale: Locale): messagingApi.RichMenuRequest {
  return {
    size: { ...RICH_MENU_SIZE },
    selected: true,
    name: RICH_MENU_NAME,
    chatBarText: localize(locale, { "zh-TW": "選單", en: "Menu" }),
    areas: ITEMS.map((item, i) => ({
      bounds: boundsOf(i),
      action: { type: "message", label: localize(locale, item.label), text: item.command },
    })),
  };
}

/**
 * The default picture: one coloured tile per area with its command, as a PNG of
 * {@link RICH_MENU_SIZE}. Only ASCII is drawn (a server may have no CJK font); a designed picture
 * can be given instead ({@link createRichMenu}'s `image`).
 */
export async function defaultRichMenuImage(): Promise<Buffer> {
  const colours = ["#06c755", "#1e88e5", "#8e24aa", "#f4511e", "#546e7a", "#00897b"];
  const tiles = ITEMS.map((item, i) => {
    const b = boundsOf(i);
    return (
      `<rect x="${b.x}" y="${b.y}" width="${b.width}" height="${b.height}" fill="${colours[i]}" stroke="#ffffff" stroke-width="6"/>` +
      `<text x="${b.x + b.width / 2}" y="${b.y + b.height / 2}" font-family="DejaVu Sans, sans-serif" font-size="96" ` +
      `fill="#ffffff" text-anchor="middle" dominant-baseline="middle">${item.command}</text>`
    );
  }).join("");
  const svg = `<svg xmlns="http://www.w3.org/2000/svg" width="${RICH_MENU_SIZE.width}" height="${RICH_MENU_SIZE.height}">${tiles}</svg>`;
  return sharp(Buffer.from(svg)).png({ compressionLevel: 9 }).toBuffer();
}

/**
 * Checks a picture for the menu: PNG or JPEG, exactly {@link RICH_MENU_SIZE}, at most
 * {@link RICH_MENU_IMAGE_LIMIT_BYTES}.
 * @returns its MIME type.
 * @throws {Error} saying what is wrong.
 */
export async function checkRichMenuImage(image: Buffer): Promise<"image/png" | "image/jpeg"> {
  if (image.length > RICH_MENU_IMAGE_LIMIT_BYTES)
    throw new Error(`the picture is ${image.length} bytes; LINE takes at most ${RICH_MENU_IMAGE_LIMIT_BYTES} (1 MB)`);
  const meta = await sharp(image)
    .metadata()
    .catch(() => {
      throw new Error("the picture is not an image sharp can read; use a PNG or JPEG");
    });
  if (meta.format !== "png" && meta.format !== "jpeg")
    throw new Error(`the picture is ${meta.format ?? "of an unknown format"}; LINE takes PNG or JPEG`);
  if (meta.width !== RICH_MENU_SIZE.width || meta.height !== RICH_MENU_SIZE.height)
    throw new Error(
      `the picture is ${meta.width} × ${meta.height} px; the menu needs exactly ${RICH_MENU_SIZE.width} × ${RICH_MENU_SIZE.height}`,
    );
  return meta.format === "png" ? "image/png" : "image/jpeg";
}

/**
 * Creates the menu, uploads its picture, makes it every user's default, and deletes the menus an
 * earlier run created (see the module comment).
 * @param options.image - a picture (PNG or JPEG, 2500 × 843 px, ≤ 1 MB); default {@link defaultRichMenuImage}.
 * @returns the new menu's id and how many older menus were deleted.
 * @throws {Error} when the picture is unfit ({@link checkRichMenuImage}), or the core errors of
 *   `api.ts` when LINE refuses a call (a menu created before the failure is deleted again).
 */
export async function createRichMenu(
  clients: LineClients,
  log: Logger,
  options: { locale: Locale; image?: Buffer },
): Promise<{ richMenuId: string; replaced: number }> {
  const image = options.image ?? (await defaultRichMenuImage());
  const type = await checkRichMenuImage(image);
  const { richMenuId } = await lineCall("createRichMenu", () =>
    clients.api.createRichMenu(richMenuRequest(options.locale)),
  );
  try {
    await lineCall("setRichMenuImage", () =>
      clients.blob.setRichMenuImage(richMenuId, new Blob([new Uint8Array(image)], { type })),
    );
    await lineCall("setDefaultRichMenu", () => clients.api.setDefaultRichMenu(richMenuId));
  } catch (error) {
    await lineCall("deleteRichMenu", () => clients.api.deleteRichMenu(richMenuId), { retries: 0 }).catch(() => {});
    throw error;
  }
  log.info({ richMenuId }, "line: rich menu created and set as every user's default");
  const { richmenus } = await lineCall("getRichMenuList", () => clients.api.getRichMenuList());
  let replaced = 0;
  for (const old of richmenus)
    if (old.name === RICH_MENU_NAME && old.richMenuId !== richMenuId) {
      await lineCall("deleteRichMenu", () => clients.api.deleteRichMenu(old.richMenuId));
      replaced++;
    }
  if (replaced > 0) log.info({ replaced }, "line: the rich menus of earlier runs were deleted");
  return { richMenuId, replaced };
}
