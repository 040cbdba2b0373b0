/**
 * `npm run fakes`: the test fakes of this folder as local servers, to try the bot's platforms
 * without accounts: fake Telegram (Bot API), fake Discord (REST and gateway), a fake Messages API,
 * the fake CWA weather API, a fake transcription API and a fake speech API (voice replies: turn
 * them on with `/settings voice always`), all on 127.0.0.1 (free ports). It prints
 * the variables that point the bot at them; run `npm start` with those in another terminal. Then
 * lines typed here are sent to the bot as a person would send them:
 *
 * - `tg <text>`: a Telegram private message from the fake user Alice;
 * - `dc <text>`: a Discord DM from the fake user Bob;
 * - `tg press <label>` / `dc press <label>`: presses the button of that label on the bot's latest
 *   message with buttons there (an approval prompt's 確認 / Confirm, for one).
 *
 * What the bot sends back (messages and edits) is printed as it arrives. The fake Messages API is
 * not a model: it answers every request with one line saying what it received. The fakes check
 * every request as strictly as in the tests (`test/fakes/*.ts`); a request they refuse is
 * answered with the platform's error, as the real service would.
 */
import { createInterface } from "node:readline";
import { pathToFileURL } from "node:url";
import { startFakeAnthropic, text, type FakeAnthropic, type FakeRequest } from "./anthropic.js";
import { startFakeCwa, type FakeCwa } from "./cwa.js";
import { FakeDiscord, type FakeUser } from "./discord.js";
import { fakesEnv } from "./env.js";
import { FakeTelegram } from "./telegram.js";
import { startFakeSpeech, type FakeSpeech } from "./speech.js";
import { startFakeTranscription, type FakeTranscription } from "./transcription.js";

/** The fakes started by {@link startLocalFakes}, the variables pointing the bot at them, and what to type. */
export interface LocalFakes {
  telegram: FakeTelegram;
  discord: FakeDiscord;
  anthropic: FakeAnthropic;
  cwa: FakeCwa;
  transcription: FakeTranscription;
  speech: FakeSpeech;
  /** `NAME=value` pairs for the bot's `.env` or environment, in print order. */
  env: Record<string, string>;
  /**
   * Handles one typed line (`tg …`, `dc …`, `tg press …`, `dc press …`).
   * @returns what to print: a note on what was done, or why the line was not understood.
   */
  handle(line: string): string;
  /**
   * Starts printing what the bot sends (new messages and edits, on both platforms) through `print`,
   * polling every `everyMs` ms. @returns a function that stops it.
   */
  follow(print: (line: string) => void, everyMs?: number): () => void;
  /** Stops every server. */
  stop(): Promise<void>;
}

/** The text of the last user turn of a Messages API request, for the fake model's one-line answer. */
function lastUserText(request: FakeRequest): string {
  const last = [...request.messages].reverse().find((m) => m.role === "user");
  if (!last) return "";
  if (typeof last.content === "string") return last.content;
  return last.content
    .filter((b) => b.type === "text" && typeof b.text === "string")
    .map((b) => b.text as string)
    .join(" ");
}

/** One line for a bot message: platform, where, and its text on one line. */
function shown(platform: string, what: string, body: string): string {
  return `${platform} ${what}: ${body.replace(/\s*\n\s*/g, " ⏎ ")}`;
}

/**
 * Starts the five fakes on loopback ports.
 * @returns the running fakes and the variables to give the bot (see {@link LocalFakes}).
 */
export async function startLocalFakes(): Promise<LocalFakes> {
  const telegram = await FakeTelegram.start();
  const discord = await FakeDiscord.start();
  const anthropic = await startFakeAnthropic({
    fallback: (request) => {
      const said = lastUserText(request).slice(-200);
      return text(
        `[fake Messages API] I received "${said}" with ${request.tools?.length ?? 0} tools offered. ` +
          "I am the test fake, not a model: every answer is this line.",
      );
    },
  });
  const cwa = await startFakeCwa();
  const transcription = await startFakeTranscription();
  const speech = await startFakeSpeech();
  const alice = telegram.user(7001, "Alice");
  const bob: FakeUser = { id: "700000000000000002", username: "bob", global_name: "Bob" };

  const env: Record<string, string> = {
    ...fakesEnv(
      { model: anthropic, telegram, discord, cwa, stt: transcription, tts: speech },
      "fake-key-for-the-local-fake-servers",
    ),
    // The fake users are strangers: serve everyone, as the end-to-end tests do.
    ACCESS_POLICY: "open",
  };

  const press = (platform: "tg" | "dc", label: string): string => {
    if (platform === "tg") {
      const message = [...telegram.sent].reverse().find((m) => telegram.buttons(m).length > 0);
      const button = message && telegram.buttons(message).find((b) => b.text.includes(label));
      if (!message || !button?.callback_data) return `no Telegram button "${label}" on the bot's latest prompt`;
      telegram.pressButton({ from: alice, message, data: button.callback_data });
      return `pressed "${button.text}" on Telegram as Alice`;
    }
    const message = [...discord.sent].reverse().find((m) => ((m.message.components as unknown[]) ?? []).length > 0);
    const rows = (message?.message.components ?? []) as { components: { label?: string; custom_id?: string }[] }[];
    const button = rows.flatMap((r) => r.components).find((c) => c.label?.includes(label) && c.custom_id);
    if (!message || !button) return `no Discord button "${label}" on the bot's latest prompt`;
    discord.clickButton(bob, message.id, button.custom_id!);
    return `pressed "${button.label}" on Discord as Bob`;
  };

  const handle = (line: string): string => {
    const match = /^\s*(tg|dc)\s+(.+)$/s.exec(line);
    if (!match) return "type tg <text> or dc <text> (or tg press <label>, dc press <label>)";
    const platform = match[1] as "tg" | "dc";
    const rest = match[2]!.trim();
    const pressed = /^press\s+(.+)$/.exec(rest);
    if (pressed) return press(platform, pressed[1]!.trim());
    if (platform === "tg") {
      telegram.sendUserMessage({ chat: telegram.privateChat(alice), from: alice, text: rest });
      return "sent to the bot on Telegram as Alice";
    }
    discord.sendUserMessage(bob, rest, { dm: true });
    return "sent to the bot on Discord as Bob";
  };

  const follow = (print: (line: string) => void, everyMs = 200): (() => void) => {
    const seen = { tgSent: 0, tgEdits: 0, dcSent: 0, dcEdits: 0, tgVoices: 0 };
    const timer = setInterval(() => {
      for (; seen.tgSent < telegram.sent.length; seen.tgSent++) {
        const message = telegram.sent[seen.tgSent]!;
        const buttons = telegram.buttons(message).map((b) => ` [${b.text}]`);
        print(shown("telegram", "bot", message.text + buttons.join("")));
      }
      for (; seen.tgVoices < telegram.voices.length; seen.tgVoices++) {
        const voice = telegram.voices[seen.tgVoices]!;
        print(
          shown(
            "telegram",
            "bot",
            `🔊 ${voice.shownAs} message (${String(voice.payload.duration)} s, ${voice.file.bytes.length} bytes)`,
          ),
        );
      }
      for (; seen.tgEdits < telegram.edits.length; seen.tgEdits++) {
        const edit = telegram.edits[seen.tgEdits]!.payload;
        if (typeof edit.text === "string") print(shown("telegram", "bot (edited)", edit.text));
      }
      for (; seen.dcSent < discord.sent.length; seen.dcSent++) {
        const message = discord.sent[seen.dcSent]!;
        const rows = (message.message.components ?? []) as { components: { label?: string }[] }[];
        const buttons = rows.flatMap((r) => r.components).map((c) => (c.label ? ` [${c.label}]` : ""));
        const voice = message.files?.length ? `🔊 voice message (${message.files[0]!.bytes.length} bytes)` : "";
        print(shown("discord", "bot", message.content + voice + buttons.join("")));
      }
      for (; seen.dcEdits < discord.edits.length; seen.dcEdits++) {
        const edit = discord.edits[seen.dcEdits]!.payload;
        if (typeof edit.content === "string") print(shown("discord", "bot (edited)", edit.content));
      }
    }, everyMs);
    return () => clearInterval(timer);
  };

  const stop = async () => {
    await Promise.allSettled([
      telegram.stop(),
      discord.close(),
      anthropic.close(),
      cwa.close(),
      transcription.close(),
      speech.close(),
    ]);
  };
  return { telegram, discord, anthropic, cwa, transcription, speech, env, handle, follow, stop };
}

/** The program: starts the fakes, prints the variables and what to type, then reads lines until stdin ends or a signal. */
async function main(): Promise<void> {
  const fakes = await startLocalFakes();
  const lines = Object.entries(fakes.env).map(([name, value]) => `${name}=${value}`);
  console.log(
    [
      "Fake Telegram, Discord, Messages API, CWA, transcription and speech servers are running on 127.0.0.1.",
      "Give the bot these variables (in .env, or on the command line of npm start in another terminal):",
      "",
      ...lines,
      "",
      "Then type here: tg <text> (Telegram DM from Alice), dc <text> (Discord DM from Bob),",
      "tg press <label> / dc press <label> (a button of the bot's latest prompt). Ctrl-C stops the fakes.",
    ].join("\n"),
  );
  const stopFollowing = fakes.follow((line) => console.log(line));
  const input = createInterface({ input: process.stdin, terminal: false });
  let stopping = false;
  const stop = async () => {
    if (stopping) return;
    stopping = true;
    stopFollowing();
    input.close();
    await fakes.stop();
    process.exit(0);
  };
  process.on("SIGINT", () => void stop());
  process.on("SIGTERM", () => void stop());
  for await (const line of input) if (line.trim()) console.log(fakes.handle(line));
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) await main();
