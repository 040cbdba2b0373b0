/**
 * `npm run line:menu [-- --image <file>]`: creates the bot's LINE rich menu (six buttons under the
 * message box of a one-to-one chat, each sending a command: `/help`, `/reminders`, `/tasks`,
 * `/memory`, `/settings`, `/usage`) and makes it every user's default; a menu an earlier run
 * created is replaced. Labels in `BOT_LOCALE`. `--image` gives a designed picture (PNG or JPEG,
 * exactly 2500 × 843 px, at most 1 MB; the areas are a 3 × 2 grid); without it a plain one is
 * drawn. See `adapters/line/menu.ts`.
 *
 * Reads `.env` (`LINE_CHANNEL_ACCESS_TOKEN`, `LINE_API_URL`, `LINE_DATA_API_URL`). Exit code 0
 * when the menu is set, 1 when LINE refused it or the picture is unfit, 2 on bad arguments or
 * configuration.
 */
import { readFile } from "node:fs/promises";
import { createClients } from "../../adapters/line/api.js";
import { createRichMenu } from "../../adapters/line/menu.js";
import { createLogger, redact } from "../log.js";
import { isEntryPoint, loadCliConfig, logDestination, runAsProgram, type CliIo } from "./io.js";
import { englishNoun } from "../i18n.js";

const USAGE = `usage: npm run line:menu [-- --image <file.png|file.jpg>]
  creates the LINE rich menu (2500 × 843 px, six commands) and sets it as every user's default`;

/**
 * `npm run line:menu -- …argv` with the environment `env`, writing to `io`.
 * @returns the exit code (0, 1 or 2, see above).
 */
export async function lineMenuMain(argv: string[], env: NodeJS.ProcessEnv, io: CliIo): Promise<number> {
  if (argv[0] === "--help" || argv[0] === "-h") {
    io.out(USAGE);
    return 0;
  }
  let imagePath: string | undefined;
  if (argv[0] === "--image" && argv[1] && argv.length === 2) imagePath = argv[1];
  else if (argv.length > 0) {
    io.err(USAGE);
    return 2;
  }
  const config = loadCliConfig(env, io);
  if (!config) return 2;
  if (!config.LINE_CHANNEL_ACCESS_TOKEN) {
    io.err(
      "LINE_CHANNEL_ACCESS_TOKEN is not set: the rich menu is created with the channel's token (see docs/line.md).",
    );
    return 2;
  }
  let image: Buffer | undefined;
  if (imagePath) {
    try {
      image = await readFile(imagePath);
    } catch (error) {
      io.err(`cannot read ${imagePath}: ${(error as NodeJS.ErrnoException).code ?? String(error)}`);
      return 2;
    }
  }
  const destination = logDestination(io);
  const log = createLogger({ level: "warn", ...(destination ? { destination } : {}) });
  try {
    const { richMenuId, replaced } = await createRichMenu(createClients(config), log, {
      locale: config.BOT_LOCALE,
      ...(image ? { image } : {}),
    });
    io.out(
      `LINE rich menu ${richMenuId} is every user's default now` +
        (replaced > 0 ? ` (${replaced} earlier ${englishNoun(replaced, "menu")} deleted).` : "."),
    );
    return 0;
  } catch (error) {
    io.err(`the rich menu was not set: ${redact(error instanceof Error ? error.message : String(error))}`);
    return 1;
  }
}

if (isEntryPoint(import.meta.url)) await runAsProgram("line:menu", lineMenuMain);
