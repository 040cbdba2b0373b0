/**
 * The bot's variables that point it at running fakes, in one place for the end-to-end harness, the
 * benches and `npm run fakes`: each fake given adds the variables naming its address and its key or
 * token (see docs/configuration.md for each variable).
 */
import type { FakeAnthropic } from "./anthropic.js";
import type { FakeCwa } from "./cwa.js";
import type { FakeDiscord } from "./discord.js";
import type { FakeLine } from "./line.js";
import type { FakeSpeech } from "./speech.js";
import type { FakeTelegram } from "./telegram.js";
import type { FakeTranscription } from "./transcription.js";

/** The fakes {@link fakesEnv} points the bot at; any may be left out. */
export interface EnvFakes {
  /** The fake Messages API (`ANTHROPIC_BASE_URL`, with `anthropicKey` as `ANTHROPIC_API_KEY`). */
  model?: Pick<FakeAnthropic, "url">;
  telegram?: Pick<FakeTelegram, "token" | "apiRoot">;
  discord?: Pick<FakeDiscord, "token" | "apiUrl" | "guildId">;
  line?: Pick<FakeLine, "secret" | "token" | "apiUrl" | "dataUrl">;
  cwa?: Pick<FakeCwa, "key" | "base">;
  /** The fake transcription API (`STT_BASE_URL`, `STT_API_KEY`). */
  stt?: Pick<FakeTranscription, "base" | "key">;
  /** The fake speech API (`TTS_BASE_URL`, `TTS_API_KEY`). */
  tts?: Pick<FakeSpeech, "base" | "key">;
}

/** The Messages API key the fakes' users send unless told otherwise (the fake accepts any key by default). */
export const FAKE_ANTHROPIC_KEY = "fake-e2e-anthropic-key-000000";

/**
 * The environment pointing the bot at `fakes`, in a fixed order (model, Telegram, Discord, LINE,
 * CWA, transcription, speech).
 * @param anthropicKey - `ANTHROPIC_API_KEY` when `fakes.model` is given; default {@link FAKE_ANTHROPIC_KEY}.
 */
export function fakesEnv(fakes: EnvFakes, anthropicKey = FAKE_ANTHROPIC_KEY): Record<string, string> {
  const { model, telegram, discord, line, cwa, stt, tts } = fakes;
  return {
    ...(model ? { ANTHROPIC_API_KEY: anthropicKey, ANTHROPIC_BASE_URL: model.url } : {}),
    ...(telegram ? { TELEGRAM_BOT_TOKEN: telegram.token, TELEGRAM_API_ROOT: telegram.apiRoot } : {}),
    ...(discord
      ? { DISCORD_TOKEN: discord.token, DISCORD_API_URL: discord.apiUrl, DISCORD_GUILD_ID: discord.guildId }
      : {}),
    ...(line
      ? {
          LINE_CHANNEL_SECRET: line.secret,
          LINE_CHANNEL_ACCESS_TOKEN: line.token,
          LINE_API_URL: line.apiUrl,
          LINE_DATA_API_URL: line.dataUrl,
        }
      : {}),
    ...(cwa ? { CWA_API_KEY: cwa.key, CWA_API_BASE: cwa.base } : {}),
    ...(stt ? { STT_BASE_URL: stt.base, STT_API_KEY: stt.key } : {}),
    ...(tts ? { TTS_BASE_URL: tts.base, TTS_API_KEY: tts.key } : {}),
  };
}
