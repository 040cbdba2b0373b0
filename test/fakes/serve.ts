/**
 * `npm run fakes`: the test fakes of this folder as local servers, to try the bot's platforms
 * without accounts: fake Telegram (Bot API), fake Discord (REST and gateway), fake LINE (Messaging
 * API, content host and the webhooks it signs), a fake Messages API, the fake CWA weather API, a
 * fake transcription API and a fake speech API (voice replies: turn them on with
 * `/settings voice always`), all on 127.0.0.1 (free ports). It prints the variables that point the
 * bot at them; run `npm start` with those in another terminal. Ports, tokens and secrets are new at
 * every start; the fake users (Alice, Bob, Carol, and Dave on every platform) and the group the bot
 * is in have the same ids at every start ({@link FAKE_PEOPLE}, {@link FAKE_GROUP}), so a bot that
 * kept its Redis finds their chats, memory and todos again after the fakes restart. Then lines
 * typed here are sent to the bot as a person would send them:
 *
 * - `tg <text>`: a Telegram private message from the fake user Alice;
 * - `dc <text>`: a Discord DM from the fake user Bob; `dc /<command> [value]`: Bob uses that slash
 *   command (its one option, when it has one, is `value`);
 * - `line <text>`: a LINE message from the fake user Carol (a signed webhook to the bot's
 *   `LINE_WEBHOOK_PORT`);
 * - `tg press <label>` / `dc press <label>` / `line press <label>`: presses the button of that label
 *   on the bot's newest message with such a button there (an approval prompt's 確認 / Confirm, the
 *   ⏹ 停止 of an answer being written, for two); on Discord also the answers to a slash command or
 *   a press (`dc /settings`). A button the bot disabled (a decided
 *   approval prompt keeps its buttons on Discord, disabled) is not pressed, as Discord's clients do
 *   not let anyone press one: the note says so and nothing is sent;
 * - `group` after the platform (`tg group <text>`, `tg group press <label>`): in the group the bot
 *   is in (a Telegram supergroup, the Discord server's text channel, a LINE group). There the bot
 *   answers only what mentions it, replies to it or is a command, so a plain text is sent with the
 *   bot's mention prepended (`@taiwan_test_bot …`, `<@…> …`, `@台灣工具助理 …`: the note shows it);
 *   a text starting with `/` is sent as is (on Discord, the slash command used in the channel);
 * - `tg photo <path> [caption]`, `tg file <path> [caption]`, `tg voice <path>` (and the same with
 *   `dc` and `line`): the file at `path` (relative to the folder the fakes run in; in quotes when it
 *   has spaces) sent as a picture, a file (a PDF, a text file…) or a voice message, as the person
 *   would: a Telegram `photo`, `document` or `voice` (Ogg Opus; other audio as an `audio` file), a
 *   Discord attachment (a voice message, flag IS_VOICE_MESSAGE, for Ogg Opus), a LINE `image`,
 *   `file` or `audio` message (whose caption, LINE media having none, follows as a text message).
 *   The fake transcription server knows the words of the sample speech ({@link SAMPLE_SPEECH}:
 *   `tg voice test/fixtures/speech/speech.ogg`); `test/fixtures/samples/` has a picture, a PDF and a
 *   text file to send;
 * - `as dave` after the platform, before `group` (`tg as dave <text>`, `tg as dave group <text>`,
 *   `tg as dave press <label>`, `tg as dave group photo <path>`): as the second person, Dave, in his
 *   DM or the group. Only a fake person's name makes `as …` a person (`tg as soon as possible` is a
 *   text for Alice), and a text cannot begin with the word `group` (it names the chat), nor with
 *   the word `press`, `photo`, `file` or `voice` (they are the commands above).
 *
 * `press` presses on the newest message with buttons that the person can see: in their DM or the
 * group, or with `group` in the group only. A plain `tg press …` presses as Alice, who also decides
 * in the group: an approval prompt asked by Alice there and pressed by Dave is refused (the bot's
 * toast to him, 「只有 Alice 可以決定。」). Alice administers the Telegram group (`/reset` there is
 * hers); Bob's slash commands in the Discord channel carry Manage Messages, Dave's do not.
 *
 * What the bot sends back (messages, edits, Telegram drafts, the toast or alert answering a Telegram
 * button press, the answers to Discord's slash commands and button presses, with their buttons; a
 * Telegram edit of only the buttons as `telegram bot (buttons changed): […]`; a Discord press's
 * update of the ephemeral reply it was pressed on once, as the answer to the press) is
 * printed as it arrives, in the order the fakes received it, each on one line, naming the chat it
 * went to when that is not the DM of Alice, Bob or Carol (`telegram (group) bot: …`,
 * `discord (Dave's DM) bot: …`; `telegram (group) bot (toast to Dave): …` for what only Dave
 * sees), shown as the console adapter shows text on a terminal (`terminalText` of
 * `src/plain-text.ts`): what the bot sends is what any user may have steered the model to write, so
 * an escape sequence or another control in it is printed as its Control Picture (`␛[2J`, `␇`, `␍`),
 * never acted on.
 *
 * The fake Messages API is not a model ({@link fakeModelReply}). A message asking for a slow
 * answer (`慢慢說`, `slow`) gets a long one streamed over {@link SLOW_ANSWER_MS}, so `/stop` and the
 * ⏹ button can be tried. Words that a rule of the demo's script matches (`npm run chat -- --demo`,
 * `src/demo/script.ts`: web search, memory, reminders, the todo list, the weather, the calculator,
 * the clock) get the script's tool call, and the tool's results the script's answer showing them,
 * so the tools and the approval of a dangerous tool can be tried: `tg 新增待辦：買牛奶`,
 * `tg 列出待辦`, then `tg 刪除待辦 1` and `tg press 確認`. Any other message gets one line saying
 * what it received (and how many pictures and documents came with it). All in the language the person wrote in (zh-TW unless the text is in Latin
 * letters only). The fakes check every request as strictly as in the tests (`test/fakes/*.ts`); a
 * request they refuse is answered with the platform's error, as the real service would.
 */
import { readFileSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { basename, extname } from "node:path";
import { createInterface } from "node:readline";
import type { Chat as TelegramChat, User as TelegramUser } from "grammy/types";
import { fileURLToPath, pathToFileURL } from "node:url";
import sharp from "sharp";
import { scriptedReply } from "../../src/demo/model.js";
import type { DemoReply } from "../../src/demo/script.js";
import { englishCount, writtenLocale } from "../../src/i18n.js";
import { audioDurationOf } from "../../src/media/voice.js";
import { MEMORY_BLOCK_START } from "../../src/memory/notes.js";
import { terminalText } from "../../src/plain-text.js";
import { TRANSCRIPT_START } from "../../src/prompts.js";
import { freePort } from "../helpers/ports.js";
import {
  startFakeAnthropic,
  type FakeAnthropic,
  type FakeBlock,
  type FakeMessageReply,
  type FakeRequest,
} from "./anthropic.js";
import { startFakeCwa, type FakeCwa } from "./cwa.js";
import { FakeDiscord, originalResponse, type FakeInteraction, type FakeUser } from "./discord.js";
import { fakesEnv } from "./env.js";
import { FakeLine, stableLineId, type FakeLineMessage, type FakeLineUser } from "./line.js";
import { FakeTelegram, parseTelegramHtml } from "./telegram.js";
import { startFakeSpeech, type FakeSpeech } from "./speech.js";
import { startFakeTranscription, type FakeTranscription } from "./transcription.js";

/** The fakes started by {@link startLocalFakes}, the variables pointing the bot at them, and what to type. */
export interface LocalFakes {
  telegram: FakeTelegram;
  discord: FakeDiscord;
  line: FakeLine;
  anthropic: FakeAnthropic;
  cwa: FakeCwa;
  transcription: FakeTranscription;
  speech: FakeSpeech;
  /** `NAME=value` pairs for the bot's `.env` or environment, in print order. */
  env: Record<string, string>;
  /** The fake users lines are sent as, with their chats with the bot ({@link FAKE_PEOPLE}: the same at every start). */
  people: {
    alice: TelegramUser;
    bob: FakeUser;
    /** Bob's DM channel with the bot. */
    bobDm: string;
    carol: FakeLineUser;
    /** Dave on each platform, with his Discord DM channel. */
    dave: { telegram: TelegramUser; discord: FakeUser; discordDm: string; line: FakeLineUser };
  };
  /** The group the bot is in on each platform ({@link FAKE_GROUP}): the Telegram chat, the Discord channel id, the LINE group id. */
  group: { telegram: TelegramChat; discord: string; line: string };
  /**
   * Handles one typed line (`tg …`, `dc …`, `line …`, `… press …`, `… photo|file|voice <path>`, each
   * with `as dave` and `group` when wanted: `tg as dave group …`).
   * @returns what to print, one line safe for a terminal: a note on what was done (naming a pressed
   * button by its label), or why the line was not understood or not done (a disabled Discord button).
   */
  handle(line: string): Promise<string>;
  /**
   * Starts printing what the bot sends (new messages, edits, drafts, the toasts answering Telegram
   * presses, and the answers to Discord's slash commands and presses, on every platform) through
   * `print`, one line each, safe for a terminal (controls shown, never acted on), polling every
   * `everyMs` ms; what arrived between two polls in the order the fakes received it.
   * @returns a function that stops it.
   */
  follow(print: (line: string) => void, everyMs?: number): () => void;
  /** Stops every server. */
  stop(): Promise<void>;
}

/**
 * The ids of the fake users, the same at every start of the fakes (unlike their ports, tokens and
 * secrets), so that a bot that kept its Redis finds the chats, memory, todos and reminders made
 * before a restart of the fakes: Alice's Telegram user id (her private chat's id too), Bob's Discord
 * user id and his DM channel with the bot, and Carol's LINE user id (derived from her name:
 * {@link stableLineId}).
 */
export const FAKE_PEOPLE = {
  alice: { telegramId: 7001 },
  bob: { discordId: "700000000000000002", dmChannelId: "820000000000000002" },
  carol: { lineId: stableLineId("U", "npm run fakes: Carol") },
  /** The second person, on every platform (`tg as dave …`, `dc as dave …`, `line as dave …`). */
  dave: {
    telegramId: 7004,
    discordId: "700000000000000004",
    dmChannelId: "820000000000000004",
    lineId: stableLineId("U", "npm run fakes: Dave"),
  },
} as const;

/**
 * The group the bot is in on each platform (`tg group …`, `dc group …`, `line group …`), the same at
 * every start, like {@link FAKE_PEOPLE}: a Telegram supergroup of Alice (its administrator) and Dave,
 * the fake Discord's server and its text channel (`FakeDiscord`'s `guildId` and `channelId`, which
 * every member of the server can write in), and a LINE group of Carol and Dave (its id derived from
 * a name: {@link stableLineId}).
 */
export const FAKE_GROUP = {
  telegram: { chatId: -1007000000001, title: "Fakes group" },
  discord: { guildId: "800000000000000001", channelId: "810000000000000001" },
  line: { groupId: stableLineId("C", "npm run fakes: group") },
} as const;

/** The language of the fake model's answers: zh-TW unless the person wrote in Latin letters only. */
export type FakeModelLanguage = "zh-TW" | "en";

/** How long the slow answer ({@link fakeModelReply}) takes to stream, in ms: long enough to press Stop. */
export const SLOW_ANSWER_MS = 40_000;

/** Words that ask the fake model for its slow answer (matched in the person's text, any case). */
export const SLOW_WORDS = /慢慢說|慢慢講|慢慢寫|\bslow(?:ly)?\b/i;

/** The person's words of the last user turn of a Messages API request, without the memory block the bot adds. */
export function lastUserText(request: FakeRequest): string {
  const last = [...request.messages].reverse().find((m) => m.role === "user");
  if (!last) return "";
  if (typeof last.content === "string") return last.content;
  return last.content
    .filter((b) => b.type === "text" && typeof b.text === "string" && !b.text.startsWith(MEMORY_BLOCK_START))
    .map((b) => b.text as string)
    .join(" ");
}

/**
 * The language to answer `text` in: `writtenLocale` of `src/i18n.ts` (the demo's model uses it
 * too), `zh-TW` for text with neither East Asian characters nor Latin letters.
 */
export function replyLanguage(text: string): FakeModelLanguage {
  // Without a group's `[Name #code]` label: the name is not what the person wrote.
  return writtenLocale(text.replace(/^\[[^\]]*\]\s*/, "")) ?? "zh-TW";
}

/**
 * A reply of the demo's script (`src/demo/script.ts`) as the fake Messages API scripts one: the same
 * blocks, the server tool's result and the citations without their encrypted fields (the fake issues
 * its own, and checks them when they come back, as the API does).
 */
export function fakeReplyOf(reply: DemoReply): FakeMessageReply {
  const content = reply.content.map((block): FakeBlock => {
    switch (block.type) {
      case "text":
        return block.citations
          ? {
              type: "text",
              text: block.text,
              citations: block.citations.map(({ url, title, cited_text }) => ({ url, title, cited_text })),
            }
          : { type: "text", text: block.text };
      case "tool_use":
        return { type: "tool_use", id: block.id, name: block.name, input: block.input };
      case "server_tool_use":
        return { type: "server_tool_use", id: block.id, name: block.name, input: block.input };
      case "web_search_tool_result":
        return {
          type: "web_search_tool_result",
          tool_use_id: block.tool_use_id,
          results: block.content.map(({ url, title, page_age }) => ({ url, title, page_age })),
        };
    }
  });
  return { content, stop_reason: reply.stop_reason };
}

/**
 * What the fake Messages API of `npm run fakes` answers. A message with {@link SLOW_WORDS} gets a
 * long answer streamed in small pieces over {@link SLOW_ANSWER_MS} (not streamed: sent whole when it
 * would have been written), so the bot's `/stop` and ⏹ button have an answer to stop. Words that
 * one of the rules of the demo's script matches (`npm run chat -- --demo`, `src/demo/script.ts`:
 * web search, memory, reminders, the todo list, the weather, the calculator, the clock) get the
 * script's reply, a tool call most often, and a turn of tool results the script's answer showing
 * them ({@link scriptedReply}, with the demo's default time zone, Asia/Taipei). Anything else gets
 * one line saying what it received (the last 200 characters of the person's words) and how many
 * tools were offered. All of it in the person's language ({@link replyLanguage}).
 */
export function fakeModelReply(request: FakeRequest): FakeMessageReply {
  const said = lastUserText(request);
  const language = replyLanguage(said);
  const tools = request.tools?.length ?? 0;
  const shown = [...said].slice(-200).join("");
  // A compaction's request carries the conversation as a transcript, this fake's own answers
  // included (they mention "slowly"): it is never the slow answer.
  if (SLOW_WORDS.test(said) && !said.includes(TRANSCRIPT_START)) {
    const lines =
      language === "en"
        ? Array.from(
            { length: 12 },
            (_, i) =>
              `Line ${i + 1} of a slow answer from the fake Messages API: it takes about ` +
              `${SLOW_ANSWER_MS / 1000} s, so there is time to press Stop (⏹ Stop, or /stop).`,
          )
        : Array.from(
            { length: 12 },
            (_, i) =>
              `這是測試用假模型慢慢寫的回答，第 ${i + 1} 行：整段大約要 ${SLOW_ANSWER_MS / 1000} 秒，來得及按「⏹ 停止」或輸入 /stop。`,
          );
    return {
      content: [{ type: "text", text: lines.join("\n") }],
      stop_reason: "end_turn",
      stream: { firstTokenMs: 200, totalMs: SLOW_ANSWER_MS, chunkChars: 4 },
    };
  }
  const scripted = scriptedReply(request, { locale: "zh-TW" });
  if (scripted) return fakeReplyOf(scripted);
  // The pictures and documents (a PDF, a text file) of the person's message, said after their words.
  const blocks = [...request.messages].reverse().find((m) => m.role === "user")?.content;
  const count = (type: string) => (Array.isArray(blocks) ? blocks.filter((b) => b.type === type).length : 0);
  const [images, documents] = [count("image"), count("document")];
  const attached =
    images + documents === 0
      ? ""
      : language === "en"
        ? ` and ${[images ? englishCount(images, "picture") : "", documents ? englishCount(documents, "document") : ""].filter(Boolean).join(" and ")}`
        : `和 ${[images ? `${images} 張圖片` : "", documents ? `${documents} 份文件` : ""].filter(Boolean).join("、")}`;
  const text =
    language === "en"
      ? `[fake Messages API] I received "${shown}"${attached} with ${englishCount(tools, "tool")} offered. ` +
        'I am the test fake, not a model: I answer with this line, or with the demo\'s script ("add todo buy milk", ' +
        '"what time is it?"; write "slowly" for a slow answer to stop).'
      : `［測試用假模型］收到「${shown}」${attached}，提供了 ${tools} 個工具。` +
        "我是測試用的假伺服器，不是真的模型：只會回這一行，或照示範的腳本回答（「新增待辦 買牛奶」、「現在幾點？」；" +
        "寫「慢慢說」可以看一段寫得很慢、可以停止的回答）。";
  return { content: [{ type: "text", text }], stop_reason: "end_turn" };
}

/** What a typed `photo`, `file` or `voice` line sends ({@link LocalFakes.handle}). */
export type FakeMediaKind = "photo" | "file" | "voice";

/** Content types of the file name endings the fakes' `photo`, `file` and `voice` lines know; others are `application/octet-stream`. */
const MEDIA_TYPES: Record<string, string> = {
  jpg: "image/jpeg",
  jpeg: "image/jpeg",
  png: "image/png",
  gif: "image/gif",
  webp: "image/webp",
  pdf: "application/pdf",
  txt: "text/plain",
  md: "text/markdown",
  csv: "text/csv",
  json: "application/json",
  html: "text/html",
  ts: "text/plain",
  py: "text/x-python",
  ogg: "audio/ogg",
  oga: "audio/ogg",
  opus: "audio/ogg",
  mp3: "audio/mpeg",
  m4a: "audio/mp4",
  wav: "audio/wav",
  webm: "audio/webm",
  flac: "audio/flac",
  aac: "audio/aac",
};

/** The content type of a file by its name's ending ({@link MEDIA_TYPES}). */
export function mediaTypeOf(name: string): string {
  return MEDIA_TYPES[extname(name).slice(1).toLowerCase()] ?? "application/octet-stream";
}

/**
 * The sample recordings the fakes' transcription server knows the words of
 * (`test/fixtures/speech/`: eSpeak NG reading 「你好，這是語音回覆。」), so `tg voice
 * test/fixtures/speech/speech.ogg` is transcribed to them; other audio gets the fake's fallback
 * transcript (「好的，收到。」).
 */
export const SAMPLE_SPEECH = {
  files: ["speech.ogg", "speech.mp3", "speech.m4a"],
  text: "你好，這是語音回覆。",
} as const;

/** The buttons of a LINE message: quick reply items and template actions with postback data. */
function lineButtons(sent: FakeLineMessage): { label: string; data: string }[] {
  const message = sent.message as {
    quickReply?: { items?: { action?: { label?: string; data?: string } }[] };
    template?: { actions?: { label?: string; data?: string }[] };
  };
  const actions = [...(message.quickReply?.items ?? []).map((i) => i.action), ...(message.template?.actions ?? [])];
  return actions.flatMap((a) => (a?.label && a.data ? [{ label: a.label, data: a.data }] : []));
}

/** A button of a Discord message or interaction response: its label, `custom_id`, and whether the bot disabled it. */
interface DiscordButton {
  label: string;
  custom_id: string;
  /** The component's `disabled` (https://discord.com/developers/docs/components/reference#button): no client can press it. */
  disabled: boolean;
}

/** The buttons (with a label and a `custom_id`) of a Discord message's or response's `components` rows. */
function discordButtons(components: unknown): DiscordButton[] {
  const rows = (Array.isArray(components) ? components : []) as {
    components?: { label?: string; custom_id?: string; disabled?: boolean }[];
  }[];
  return rows
    .flatMap((r) => r.components ?? [])
    .flatMap((c) =>
      c.label && c.custom_id ? [{ label: c.label, custom_id: c.custom_id, disabled: c.disabled === true }] : [],
    );
}

/**
 * Text from the bot (a message, an edit, a button's label: what any user may have steered the model
 * to write) as one line for the terminal: shown as the console adapter shows it ({@link terminalText}:
 * ESC as `␛`, BEL as `␇`, a lone CR as `␍`, C1 and bidi controls removed), its line breaks as ` ⏎ `.
 */
function printable(text: string): string {
  return terminalText(text).replace(/\s*\n\s*/g, " ⏎ ");
}

/** One line for a bot message: platform (with the chat when it is not a DM of Alice, Bob or Carol), what, and its text ({@link printable}). */
function shown(platform: string, what: string, body: string): string {
  return `${platform} ${what}: ${printable(body)}`;
}

/** Discord's message flag IS_VOICE_MESSAGE (https://discord.com/developers/docs/resources/message#message-object-message-flags). */
const DISCORD_VOICE_MESSAGE_FLAG = 1 << 13;

/** What a typed line starts with: the platform it is sent on. */
type Platform = "tg" | "dc" | "line";

/** The id of the user who used a Discord slash command or pressed a button (a server's `member.user`, a DM's `user`). */
function invokerOf(interaction: FakeInteraction): string | undefined {
  const payload = interaction.payload as { member?: { user?: FakeUser }; user?: FakeUser };
  return (payload.member?.user ?? payload.user)?.id;
}

/**
 * Starts the fakes on loopback ports (and picks a free port for the bot's LINE webhook).
 * @returns the running fakes and the variables to give the bot (see {@link LocalFakes}).
 */
export async function startLocalFakes(): Promise<LocalFakes> {
  // Message ids from the clock: a restarted fake's messages must not look like the earlier run's to a
  // bot that kept its Redis (it remembers a conversation's message ids for 2 days and drops repeats).
  // Telegram's: 1000 ids per second since the epoch, modulo about 11 days, so they stay under 2^31.
  const seconds = Math.floor(Date.now() / 1000);
  const telegram = await FakeTelegram.start({ firstMessageId: 1000 + (seconds % 1_000_000) * 1000 });
  const discord = await FakeDiscord.start();
  const line = await FakeLine.start({ firstMessageId: Date.now() * 1000 });
  /** The slow answers begun, in order: their language and when (printed by `follow`: the answer is being written now). */
  const slowAnswers: { language: FakeModelLanguage; at: number }[] = [];
  const anthropic = await startFakeAnthropic({
    fallback: (request) => {
      const reply = fakeModelReply(request);
      if (reply.stream) slowAnswers.push({ language: replyLanguage(lastUserText(request)), at: Date.now() });
      return reply;
    },
  });
  const cwa = await startFakeCwa();
  const transcription = await startFakeTranscription();
  const speech = await startFakeSpeech();
  // The sample recordings are transcribed to their words (`tg voice test/fixtures/speech/speech.ogg`).
  const samples = fileURLToPath(new URL("../fixtures/speech/", import.meta.url));
  for (const file of SAMPLE_SPEECH.files) transcription.say(readFileSync(samples + file), SAMPLE_SPEECH.text);
  // The same people, with the same chats, at every start (FAKE_PEOPLE).
  const alice = telegram.user(FAKE_PEOPLE.alice.telegramId, "Alice");
  const bob: FakeUser = { id: FAKE_PEOPLE.bob.discordId, username: "bob", global_name: "Bob" };
  const bobDm = discord.dmChannel(bob, FAKE_PEOPLE.bob.dmChannelId);
  const carol: FakeLineUser = line.user("Carol", FAKE_PEOPLE.carol.lineId);
  const dave = {
    telegram: telegram.user(FAKE_PEOPLE.dave.telegramId, "Dave"),
    discord: { id: FAKE_PEOPLE.dave.discordId, username: "dave", global_name: "Dave" } as FakeUser,
    discordDm: "",
    line: line.user("Dave", FAKE_PEOPLE.dave.lineId),
  };
  dave.discordDm = discord.dmChannel(dave.discord, FAKE_PEOPLE.dave.dmChannelId);
  // The group on each platform (FAKE_GROUP). Alice administers the Telegram group (getChatMember
  // says so: she may /reset it, Dave may not); the Discord channel is the fake's own server channel.
  const group = {
    telegram: telegram.group(FAKE_GROUP.telegram.chatId, FAKE_GROUP.telegram.title),
    discord: FAKE_GROUP.discord.channelId,
    line: line.group([carol, dave.line], FAKE_GROUP.line.groupId),
  };
  telegram.admins.set(group.telegram.id, new Set([alice.id]));
  if (discord.guildId !== FAKE_GROUP.discord.guildId || discord.channelId !== FAKE_GROUP.discord.channelId)
    throw new Error("FAKE_GROUP.discord is not the fake Discord's server channel");
  const linePort = await freePort();
  const linePath = "/line/webhook";
  line.webhookUrl = `http://127.0.0.1:${linePort}${linePath}`;

  const env: Record<string, string> = {
    ...fakesEnv(
      { model: anthropic, telegram, discord, line, cwa, stt: transcription, tts: speech },
      "fake-key-for-the-local-fake-servers",
    ),
    // The bot's LINE webhook server, which the fake LINE posts to.
    LINE_WEBHOOK_PORT: String(linePort),
    LINE_WEBHOOK_PATH: linePath,
    // The fake users are strangers: serve everyone, as the end-to-end tests do.
    ACCESS_POLICY: "open",
  };

  /** Sends LINE events to the bot's webhook; a bot not (yet) listening is said so. */
  const deliverLine = async (events: Record<string, unknown>[], done: string): Promise<string> => {
    try {
      const status = await line.deliver(events);
      return status === 200 ? done : `the bot's LINE webhook answered ${status}`;
    } catch {
      return `the bot's LINE webhook (${line.webhookUrl}) did not answer: is npm start running with these variables?`;
    }
  };

  /**
   * Who a typed line is from: the platforms' own people (Alice, Bob, Carol: `own`) or Dave (`second`),
   * with the Discord DM channel of the one on Discord.
   */
  type Typist = { tg: TelegramUser; dc: FakeUser; dcDm: string; line: FakeLineUser };
  const own: Typist = { tg: alice, dc: bob, dcDm: bobDm, line: carol };
  const second: Typist = { tg: dave.telegram, dc: dave.discord, dcDm: dave.discordDm, line: dave.line };
  const names: Record<Platform, string> = { tg: "Telegram", dc: "Discord", line: "LINE" };
  /** A person's name on a platform. */
  const nameOf = (platform: Platform, who: Typist): string =>
    platform === "tg" ? who.tg.first_name : platform === "dc" ? who.dc.global_name! : who.line.displayName;
  /** The DM of `who` on a platform: Telegram's private chat id, Discord's DM channel, LINE's user id. */
  const dmOf = (platform: Platform, who: Typist): string =>
    platform === "tg" ? String(who.tg.id) : platform === "dc" ? who.dcDm : who.line.userId;
  const groupOf = (platform: Platform): string =>
    platform === "tg" ? String(group.telegram.id) : platform === "dc" ? group.discord : group.line;
  /**
   * Whether `who` sees the bot's messages in `chatId`: with `inGroup`, the group's only; otherwise
   * every chat but the other fake person's DM (their own DM, the group, a chat of no fake person).
   */
  const sees = (platform: Platform, who: Typist, inGroup: boolean, chatId: string): boolean =>
    inGroup ? chatId === groupOf(platform) : chatId !== dmOf(platform, who === own ? second : own);
  /** Where a line went or was pressed, for the notes: `on Telegram` (a DM) or `in the Telegram group`. */
  const placeOf = (platform: Platform, chatId: string): string =>
    chatId === groupOf(platform) ? `in the ${names[platform]} group` : `on ${names[platform]}`;
  /** Who a Telegram press was made by, and in which chat, by its callback query id (for the toast answering it). */
  const tgPresses = new Map<string, { by: TelegramUser; chatId: number }>();

  const press = async (platform: Platform, who: Typist, inGroup: boolean, label: string): Promise<string> => {
    const name = nameOf(platform, who);
    // Said when no prompt was found: where it was looked for, when it was not as before (Alice's, Bob's, Carol's chats).
    const looked = `${inGroup ? " in the group" : ""}${who === own ? "" : ` that ${name} can see`}`;
    if (platform === "tg") {
      // The newest message with a button of that label (a later message with other buttons, such as
      // a memory note's ↩️, does not hide a prompt above it, as a person scrolls up to it).
      const message = [...telegram.sent]
        .reverse()
        .find(
          (m) =>
            sees("tg", who, inGroup, String(m.chatId)) &&
            telegram.buttons(m).some((b) => b.text.includes(label) && b.callback_data),
        );
      const button = message && telegram.buttons(message).find((b) => b.text.includes(label) && b.callback_data);
      if (!message || !button?.callback_data) return `no Telegram button "${label}" on the bot's messages${looked}`;
      const queryId = telegram.pressButton({ from: who.tg, message, data: button.callback_data });
      tgPresses.set(queryId, { by: who.tg, chatId: message.chatId });
      return `pressed "${button.text}" ${placeOf("tg", String(message.chatId))} as ${name}`;
    }
    if (platform === "line") {
      const message = [...line.sent]
        .reverse()
        .find((m) => sees("line", who, inGroup, m.to) && lineButtons(m).some((b) => b.label.includes(label)));
      const button = message && lineButtons(message).find((b) => b.label.includes(label));
      if (!message || !button) return `no LINE button "${label}" on the bot's messages${looked}`;
      const place = message.to === group.line ? { from: who.line, groupId: group.line } : { from: who.line };
      return deliverLine(
        [line.postbackEvent(place, button.data)],
        `pressed "${button.label}" ${placeOf("line", message.to)} as ${name}`,
      );
    }
    // The newest of the bot's messages and its answers to the person's slash commands and presses
    // (ephemeral replies, as their edits left them, which only the person who used the command sees)
    // with a button of that label.
    type Prompt = { at: number; channelId: string; buttons: DiscordButton[]; press: (customId: string) => void };
    const prompts: Prompt[] = [
      ...discord.sent
        .filter((m) => sees("dc", who, inGroup, m.channelId))
        .map((m) => ({
          at: m.at,
          channelId: m.channelId,
          buttons: discordButtons(m.message.components),
          press: (customId: string) => void discord.clickButton(who.dc, m.id, customId),
        })),
      ...[...discord.interactions.values()].flatMap((i) =>
        i.response && invokerOf(i) === who.dc.id && sees("dc", who, inGroup, String(i.payload.channel_id))
          ? [
              {
                at: i.editedAt ?? i.response.at,
                channelId: String(i.payload.channel_id),
                buttons: discordButtons(originalResponse(i)?.components),
                press: (customId: string) => void discord.clickEphemeralButton(who.dc, i, customId),
              },
            ]
          : [],
      ),
    ];
    // Only a button the bot left enabled: Discord's clients do not let anyone press a disabled one (a
    // decided approval prompt keeps its buttons, disabled), as Telegram's prompt loses its buttons.
    const pressable = (b: DiscordButton) => b.label.includes(label) && !b.disabled;
    const prompt = prompts.filter((p) => p.buttons.some(pressable)).sort((a, b) => b.at - a.at)[0];
    const button = prompt?.buttons.find(pressable);
    if (!prompt || !button) {
      const disabled = prompts
        .filter((p) => p.buttons.some((b) => b.label.includes(label)))
        .sort((a, b) => b.at - a.at)[0]
        ?.buttons.find((b) => b.label.includes(label));
      return disabled
        ? `the Discord button "${disabled.label}" is disabled (the bot closed that prompt): Discord does not let ${name} press it, nothing was sent`
        : `no Discord button "${label}" on the bot's messages${looked}`;
    }
    prompt.press(button.custom_id);
    return `pressed "${button.label}" ${placeOf("dc", prompt.channelId)} as ${name}`;
  };

  /**
   * A person uses a slash command the bot registered (`/stop`, `/settings voice`) in their DM or the
   * group; its one option is `value`. Bob's commands in the group carry Manage Messages (he moderates
   * the channel: `/reset` is his there), Dave's do not.
   */
  const slash = (who: Typist, inGroup: boolean, name: string, value: string): string => {
    const registered = discord.commandRegistrations.at(-1)?.body ?? [];
    const command = registered.find((c) => c.name === name);
    if (!command)
      return registered.length === 0
        ? "the bot has registered no Discord slash commands yet: is npm start running with these variables?"
        : `the bot has no Discord slash command /${name} (it has ${registered.map((c) => `/${String(c.name)}`).join(" ")})`;
    const option = (command.options as { name: string }[] | undefined)?.[0];
    if (value && !option) return `/${name} takes no value on Discord`;
    const values = value && option ? { values: { [option.name]: value } } : {};
    if (inGroup)
      discord.slashCommand(who.dc, name, {
        channelId: group.discord,
        ...(who === own ? { permissions: FakeDiscord.MANAGE_MESSAGES_PERMISSIONS } : {}),
        ...values,
      });
    else discord.slashCommand(who.dc, name, { dm: true, ...values });
    return `used /${name}${value ? ` ${value}` : ""} ${inGroup ? "in the Discord group" : "on Discord"} as ${nameOf("dc", who)}`;
  };

  /** What each platform's mention of the bot looks like in a group: prepended to a plain text there. */
  const mentions: Record<Platform, string> = {
    tg: `@${telegram.bot.username}`,
    dc: `<@${discord.bot.id}>`,
    line: `@${line.botName}`,
  };
  const USAGE =
    "type tg <text>, dc <text> or line <text> (or tg press <label>, dc press <label>, line press <label>; " +
    "tg photo <path> [caption], tg file <path> [caption], tg voice <path>, and the same with dc and line); " +
    "after tg, dc or line, add group to write in the group and as dave to write or press as Dave: tg as dave group <text>";

  /**
   * A person sends the file at `path` (relative to the folder `npm run fakes` runs in) as a picture,
   * a file or a voice message, with `caption` (on LINE, whose media carry no text, a text message
   * after it). In a group the bot's mention is put before the caption, as for a text.
   * @returns the note on what was sent, or why nothing was.
   */
  const sendMedia = async (
    platform: Platform,
    who: Typist,
    inGroup: boolean,
    kind: FakeMediaKind,
    args: string,
  ): Promise<string> => {
    const parsed = /^(?:"([^"]+)"|'([^']+)'|(\S+))(?:\s+(.*))?$/s.exec(args.trim());
    const usage = `type ${platform} ${kind} <path> [caption]: the path of a file on this computer (in quotes when it has spaces)`;
    if (!parsed) return usage;
    const path = (parsed[1] ?? parsed[2] ?? parsed[3])!;
    const caption = parsed[4]?.trim() ?? "";
    if (kind === "voice" && caption) return `a voice message has no caption here: type ${platform} voice <path>`;
    let bytes: Buffer;
    try {
      bytes = await readFile(path);
    } catch (error) {
      return `could not read ${path} (${(error as NodeJS.ErrnoException).code ?? String(error)}): nothing was sent`;
    }
    if (bytes.length === 0) return `${path} is empty: nothing was sent`;
    const filename = basename(path);
    const type = mediaTypeOf(filename);
    let size: { width: number; height: number } | undefined;
    if (kind === "photo") {
      const meta = await sharp(bytes)
        .metadata()
        .catch(() => undefined);
      if (!meta?.width || !meta.height)
        return `${path} is not a picture (sharp cannot read it): send it as a file, ${platform} file ${path}`;
      size = { width: meta.width, height: meta.height };
    }
    let seconds = 0;
    if (kind === "voice") {
      const duration = await audioDurationOf(bytes, type);
      if (duration === undefined)
        return `${path} is not audio whose length can be read (Ogg Opus, MP3, M4A, WAV…): nothing was sent`;
      seconds = Math.max(1, Math.round(duration));
    }
    // Ogg Opus is what a voice message is on Telegram and Discord; other audio goes as an audio file.
    const voiceNote = kind === "voice" && type === "audio/ogg";
    const what =
      kind === "photo"
        ? `a picture (${size!.width}×${size!.height})`
        : kind === "file"
          ? `a file (${type}, ${bytes.length} bytes)`
          : voiceNote || platform === "line"
            ? `a voice message (${seconds} s)`
            : `an audio file (${seconds} s: only Ogg Opus is a voice message there)`;
    const name = nameOf(platform, who);
    // In a group the caption gets the bot's mention (a media message without one is not answered there).
    const withText = inGroup && !caption.startsWith("/") ? `${mentions[platform]} ${caption}`.trim() : caption;
    const sent = `sent ${filename} as ${what} ${inGroup ? `to the ${names[platform]} group` : `to the bot on ${names[platform]}`} as ${name}`;
    if (platform === "tg") {
      const file = telegram.addFile(bytes, {
        path: `${kind === "photo" ? "photos" : voiceNote ? "voice" : kind === "voice" ? "music" : "documents"}/${filename}`,
      });
      const extra =
        kind === "photo"
          ? { photo: [{ ...file, ...size }] }
          : kind === "file"
            ? { document: { ...file, file_name: filename, mime_type: type } }
            : voiceNote
              ? { voice: { ...file, duration: seconds, mime_type: "audio/ogg" } }
              : { audio: { ...file, duration: seconds, file_name: filename, mime_type: type } };
      telegram.sendUserMessage({
        chat: inGroup ? group.telegram : telegram.privateChat(who.tg),
        from: who.tg,
        ...(withText ? { caption: withText } : {}),
        extra,
      });
      return sent;
    }
    if (platform === "dc") {
      const channelId = inGroup ? group.discord : who.dcDm;
      const attachment = discord.addAttachment(bytes, {
        filename: voiceNote ? "voice-message.ogg" : filename,
        contentType: type,
        channelId,
        ...size,
        ...(voiceNote ? { extra: { duration_secs: seconds, waveform: "AAAAAAAAAAAAAAAA" } } : {}),
      });
      discord.sendUserMessage(who.dc, voiceNote ? "" : withText, {
        ...(inGroup ? { channelId } : { dm: true }),
        attachments: [attachment],
        ...(voiceNote ? { flags: DISCORD_VOICE_MESSAGE_FLAG } : {}),
      });
      return sent;
    }
    const place = inGroup ? { from: who.line, groupId: group.line } : { from: who.line };
    const id = line.addContent(bytes, type);
    const message =
      kind === "photo"
        ? { id, type: "image", contentProvider: { type: "line" } }
        : kind === "file"
          ? { id, type: "file", fileName: filename, fileSize: bytes.length }
          : { id, type: "audio", duration: seconds * 1000, contentProvider: { type: "line" } };
    const events = [line.messageEvent(place, message)];
    if (caption) events.push(line.textEvent(place, caption, { mention: inGroup }));
    return deliverLine(
      events,
      sent +
        (caption
          ? `, then the caption as a text message (a LINE ${kind === "file" ? "file" : "picture"} carries none)`
          : "") +
        (inGroup && !caption ? " (it mentions nobody: in a group the bot answers only what mentions it)" : ""),
    );
  };

  /** What a typed line does, and the note on it (with the bot's words in it, such as a button's label, as they came). */
  const act = async (typed: string): Promise<string> => {
    const match = /^\s*(tg|dc|line)\s+(.+)$/s.exec(typed);
    if (!match) return USAGE;
    const platform = match[1] as Platform;
    let rest = match[2]!.trim();
    // `as <person>`: only a fake person's name (alice, bob, carol, dave) is one; `tg as soon as …` is a text.
    let who = own;
    const as = /^as\s+(alice|bob|carol|dave)(?:\s+(.*))?$/is.exec(rest);
    if (as) {
      const named = as[1]!.toLowerCase();
      const mine = nameOf(platform, own);
      if (named === "dave") who = second;
      else if (named !== mine.toLowerCase())
        return (
          `${named[0]!.toUpperCase()}${named.slice(1)} is not on ${names[platform]}: ` +
          `there, type ${platform} <text> (${mine}) or ${platform} as dave <text>`
        );
      rest = (as[2] ?? "").trim();
    }
    const inGroup = /^group(?:\s|$)/.test(rest);
    if (inGroup) rest = rest.slice("group".length).trim();
    if (rest === "") return USAGE;
    const name = nameOf(platform, who);
    const pressed = /^press\s+(.+)$/s.exec(rest);
    if (pressed) return press(platform, who, inGroup, pressed[1]!.trim());
    const media = /^(photo|file|voice)(?:\s+(.*))?$/s.exec(rest);
    if (media) return sendMedia(platform, who, inGroup, media[1] as FakeMediaKind, media[2] ?? "");
    // In a group the bot answers only what mentions it, replies to it or is a command: a plain text gets its mention.
    const text = inGroup && !rest.startsWith("/") ? `${mentions[platform]} ${rest}` : rest;
    const sent = inGroup
      ? `sent to the ${names[platform]} group as ${name}` +
        (text === rest
          ? ""
          : `, as "${text}" (the bot's mention prepended: in a group it answers only what mentions it, replies to it or is a command)`)
      : `sent to the bot on ${names[platform]} as ${name}`;
    if (platform === "tg") {
      telegram.sendUserMessage({
        chat: inGroup ? group.telegram : telegram.privateChat(who.tg),
        from: who.tg,
        text,
      });
      return sent;
    }
    if (platform === "line")
      return deliverLine(
        [
          inGroup
            ? line.textEvent({ from: who.line, groupId: group.line }, rest, { mention: text !== rest })
            : line.textEvent({ from: who.line }, rest),
        ],
        sent,
      );
    const command = /^\/([\w-]+)(?:\s+(.*))?$/s.exec(rest);
    if (command) return slash(who, inGroup, command[1]!.toLowerCase(), command[2]?.trim() ?? "");
    discord.sendUserMessage(who.dc, text, inGroup ? { channelId: group.discord } : { dm: true });
    return sent;
  };
  const handle = async (typed: string): Promise<string> => printable(await act(typed));

  /**
   * The platform as printed before a bot message, with the chat it went to when that is not the DM
   * of Alice, Bob or Carol: `telegram (group)`, `discord (Dave's DM)`; a chat of no fake person as the DM.
   */
  const chatOf = (platform: Platform, chatId: string | number): string => {
    const printed = { tg: "telegram", dc: "discord", line: "line" }[platform];
    const id = String(chatId);
    if (id === groupOf(platform)) return `${printed} (group)`;
    return id === dmOf(platform, second) ? `${printed} (Dave's DM)` : printed;
  };

  const follow = (print: (line: string) => void, everyMs = 200): (() => void) => {
    const seen = {
      tgSent: 0,
      tgEdits: 0,
      tgDrafts: 0,
      tgToasts: 0,
      dcSent: 0,
      dcEdits: 0,
      tgVoices: 0,
      lineSent: 0,
      slow: 0,
    };
    const answered = new Map<FakeInteraction, number>(); // interaction → its response and edits printed
    let draftShownAt = 0;
    const timer = setInterval(() => {
      // What arrived since the last look, printed in the order it arrived (by when the fake received it).
      const lines: { at: number; line: string }[] = [];
      const add = (at: number, line: string) => lines.push({ at, line });
      for (; seen.slow < slowAnswers.length; seen.slow++) {
        const slow = slowAnswers[seen.slow]!;
        add(
          slow.at,
          slow.language === "en"
            ? `fake model: writing a slow answer (${SLOW_ANSWER_MS / 1000} s): stop it now`
            : `fake model: 正在慢慢寫回答（${SLOW_ANSWER_MS / 1000} 秒），現在可以停止`,
        );
      }
      for (; seen.tgSent < telegram.sent.length; seen.tgSent++) {
        const message = telegram.sent[seen.tgSent]!;
        const buttons = telegram.buttons(message).map((b) => ` [${b.text}]`);
        add(message.at, shown(chatOf("tg", message.chatId), "bot", message.text + buttons.join("")));
      }
      // A private chat's answer grows as a draft: the newest one, at most once a second. A draft held
      // back by that second is dropped once a message to its chat came after it (the answer it
      // previewed, printed already): printed below that message, it would read as a draft sent after it.
      if (seen.tgDrafts < telegram.drafts.length && Date.now() - draftShownAt >= 1000) {
        seen.tgDrafts = telegram.drafts.length;
        const draft = telegram.drafts.at(-1)!;
        if (!telegram.sent.some((m) => m.chatId === draft.chatId && m.at > draft.at)) {
          draftShownAt = Date.now();
          add(draft.at, shown(chatOf("tg", draft.chatId), "bot (draft)", draft.text));
        }
      }
      for (; seen.tgVoices < telegram.voices.length; seen.tgVoices++) {
        const voice = telegram.voices[seen.tgVoices]!;
        add(
          voice.at,
          shown(
            chatOf("tg", voice.chatId),
            "bot",
            `🔊 ${voice.shownAs} message (${String(voice.payload.duration)} s, ${voice.file.bytes.length} bytes)`,
          ),
        );
      }
      for (; seen.tgEdits < telegram.edits.length; seen.tgEdits++) {
        const { payload: edit, at } = telegram.edits[seen.tgEdits]!;
        // The message's buttons after the edit: an edit without `reply_markup` removes them.
        const markup = (typeof edit.reply_markup === "string" ? JSON.parse(edit.reply_markup) : edit.reply_markup) as
          { inline_keyboard?: { text: string }[][] } | undefined;
        const buttons = (markup?.inline_keyboard ?? []).flat().map((b) => ` [${b.text}]`);
        const where = chatOf("tg", String(edit.chat_id));
        // Shown as Telegram shows it: an HTML edit's tags and entities (`&amp;`) parsed, as for a sent message.
        if (typeof edit.text === "string") {
          const text = edit.parse_mode === "HTML" ? parseTelegramHtml(edit.text).text : edit.text;
          add(at, shown(where, "bot (edited)", text + buttons.join("")));
        } else {
          // `editMessageReplyMarkup`: only the buttons changed (the text is printed already).
          add(
            at,
            buttons.length
              ? shown(where, "bot (buttons changed)", buttons.join("").slice(1))
              : `${where} bot (buttons removed)`,
          );
        }
      }
      // The bot's answer to a button press (answerCallbackQuery's text): a toast, or an alert to dismiss,
      // shown to the presser only, in the chat of the pressed message: `(toast to Dave)` for Dave's press.
      for (; seen.tgToasts < telegram.toasts.length; seen.tgToasts++) {
        const toast = telegram.toasts[seen.tgToasts]!;
        const pressed = tgPresses.get(toast.callbackQueryId);
        const to = pressed && pressed.by.id !== alice.id ? ` to ${pressed.by.first_name}` : "";
        add(
          toast.at,
          shown(
            pressed ? chatOf("tg", pressed.chatId) : "telegram",
            `bot (${toast.alert ? "alert" : "toast"}${to})`,
            toast.text,
          ),
        );
      }
      for (; seen.dcSent < discord.sent.length; seen.dcSent++) {
        const message = discord.sent[seen.dcSent]!;
        const buttons = discordButtons(message.message.components).map((b) => ` [${b.label}]`);
        const voice = message.files?.length ? `🔊 voice message (${message.files[0]!.bytes.length} bytes)` : "";
        add(message.at, shown(chatOf("dc", message.channelId), "bot", message.content + voice + buttons.join("")));
      }
      for (; seen.dcEdits < discord.edits.length; seen.dcEdits++) {
        const { payload: edit, at, channelId } = discord.edits[seen.dcEdits]!;
        if (typeof edit.content === "string") add(at, shown(chatOf("dc", channelId), "bot (edited)", edit.content));
      }
      // The answers to slash commands and button presses (ephemeral: only the one who used the command
      // or pressed sees them): the interaction's response, then its edits; `(to Dave's command)` for Dave's.
      // A press's update of the ephemeral reply it was pressed on (response type 7) is also recorded as
      // an edit of that reply's interaction (the same object): printed once, as the answer to the press.
      const updates = new Set(
        [...discord.interactions.values()].filter((i) => i.response?.type === 7).map((i) => i.response!.data),
      );
      for (const interaction of discord.interactions.values()) {
        if (!interaction.response) continue;
        const whose = invokerOf(interaction) === dave.discord.id ? "Dave's" : "the";
        const to = `bot (to ${whose} ${interaction.payload.type === 2 ? "command" : "press"})`;
        const where = chatOf("dc", String(interaction.payload.channel_id));
        const parts = [interaction.response.data, ...interaction.edits];
        for (let i = answered.get(interaction) ?? 0; i < parts.length; i++) {
          const content = typeof parts[i]?.content === "string" ? (parts[i]!.content as string) : "";
          const buttons = discordButtons(parts[i]?.components).map((b) => ` [${b.label}]`);
          // The edits' times are not kept, only the last one's.
          const at = i === 0 ? interaction.response.at : (interaction.editedAt ?? interaction.response.at);
          if (i > 0 && updates.has(parts[i])) continue;
          if (content !== "" || buttons.length > 0) add(at, shown(where, to, content + buttons.join("")));
        }
        answered.set(interaction, parts.length);
      }
      for (; seen.lineSent < line.sent.length; seen.lineSent++) {
        const message = line.sent[seen.lineSent]!;
        const buttons = lineButtons(message).map((b) => ` [${b.label}]`);
        const body = message.text || `(${String(message.message.type)} message)`;
        add(message.at, shown(chatOf("line", message.to), `bot (${message.via})`, body + buttons.join("")));
      }
      // A stable sort: what arrived in the same millisecond keeps the order above.
      for (const { line } of lines.sort((a, b) => a.at - b.at)) print(line);
    }, everyMs);
    return () => clearInterval(timer);
  };

  const stop = async () => {
    await Promise.allSettled([
      telegram.stop(),
      discord.close(),
      line.stop(),
      anthropic.close(),
      cwa.close(),
      transcription.close(),
      speech.close(),
    ]);
  };
  return {
    telegram,
    discord,
    line,
    anthropic,
    cwa,
    transcription,
    speech,
    env,
    people: { alice, bob, bobDm, carol, dave },
    group,
    handle,
    follow,
    stop,
  };
}

/** The program: starts the fakes, prints the variables and what to type, then reads lines until stdin ends or a signal. */
async function main(): Promise<void> {
  const fakes = await startLocalFakes();
  const lines = Object.entries(fakes.env).map(([name, value]) => `${name}=${value}`);
  console.log(
    [
      "Fake Telegram, Discord, LINE, Messages API, CWA, transcription and speech servers are running on 127.0.0.1.",
      "Give the bot these variables (in .env, or on the command line of npm start in another terminal);",
      "they change at every start of the fakes, so copy them again after a restart (Alice, Bob, Carol, Dave and",
      "the group keep their ids, so the bot's chats, memory and todos of theirs carry over):",
      "",
      ...lines,
      "",
      "Then type here: tg <text> (Telegram DM from Alice), dc <text> (Discord DM from Bob; dc /<command> [value]",
      "for his slash commands), line <text> (LINE message from Carol), tg|dc|line press <label> (a button of that",
      "label on the bot's newest message with one). The fake model answers with the demo's script (npm run chat -- --demo) when a rule",
      "matches: tg 新增待辦：買牛奶, tg 列出待辦, then tg 刪除待辦 1 and tg press 確認 to approve the deletion.",
      "Write 慢慢說 (or slowly) for a slow answer, then stop it: tg /stop, dc press 停止, dc /stop or line /stop.",
      "Pictures, files and voice messages: tg photo <path> [caption], tg file <path> [caption], tg voice <path>",
      "(the same with dc and line), e.g. tg photo test/fixtures/samples/receipt.jpg 總共多少錢？,",
      "tg file test/fixtures/samples/bill.pdf, tg voice test/fixtures/speech/speech.ogg (transcribed to its words).",
      "A group and a second person: tg group <text> writes in the group the bot is in (the bot's @mention is",
      "prepended, since in a group it answers only mentions, replies and commands; /<command> is sent as is);",
      "tg as dave <text>, tg as dave group <text> and tg as dave press <label> write and press as Dave (the same",
      "with dc and line). With ACCESS_POLICY=open the group is answered at once, no /enable needed. Answers",
      "outside Alice's, Bob's and Carol's DMs are printed with their chat: telegram (group) bot: …",
      "Ctrl-C stops the fakes.",
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
  for await (const typed of input) if (typed.trim()) console.log(await fakes.handle(typed));
}

if (process.argv[1] && import.meta.url === pathToFileURL(process.argv[1]).href) await main();
