import { expect, it } from "vitest";
import { splitMessage } from "../../adapters/discord/split.js";
import { planChunks } from "../../adapters/telegram/split.js";
import { testConfig } from "../helpers/config.js";
import { silentLogger } from "../../src/log.js";
import { createOutbound as discordOutbound } from "../../adapters/discord/index.js";
import { createOutbound as telegramOutbound } from "../../adapters/telegram/index.js";

// The worker skips the per-chunk counter for answers up to `singleChunkUnits` (one Redis command
// less per message), so each platform's bound must really mean "one message".
const shapes = [
  "&",
  "<b>",
  "x\n",
  "- item\n",
  "1. x\n",
  "# h\n\n",
  "> quote\n",
  "😀",
  "| 1 | 2 |\n",
  "**b** _i_ `c` [l](https://example.com/x)\n",
  "a".repeat(300) + "\n\n",
];
const heads = ["", "```js\n", "| a | b |\n|---|---|\n"];

it("an answer within singleChunkUnits goes out as one message on Telegram and Discord", () => {
  const telegram = telegramOutbound(
    testConfig({ TELEGRAM_BOT_TOKEN: "12345:AAtesttesttesttesttesttest" }),
    silentLogger,
  );
  const discord = discordOutbound(testConfig({ DISCORD_TOKEN: "fake-discord-token.abcdef.0123456789" }), silentLogger);
  for (const head of heads) {
    for (const shape of shapes) {
      const tg = (head + shape.repeat(Math.ceil(telegram.singleChunkUnits! / shape.length))).slice(
        0,
        telegram.singleChunkUnits,
      );
      expect(planChunks(tg), JSON.stringify({ head, shape })).toHaveLength(1);
      const dc = (head + shape.repeat(Math.ceil(discord.singleChunkUnits! / shape.length))).slice(
        0,
        discord.singleChunkUnits,
      );
      expect(splitMessage(dc, 2000), JSON.stringify({ head, shape })).toHaveLength(1);
    }
  }
});
