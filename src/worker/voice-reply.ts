/**
 * Voice replies (`docs/voice.md`): when a conversation's `/settings` voice is `always`, or
 * `when-spoken` and the message was a voice message, the answer is spoken before its text goes
 * out. Between *persist* and *deliver* (`pipeline.ts`): the answer's words ({@link spokenText}:
 * no links, code or tables, at most `MAX_TTS_CHARACTERS`) go to the speech endpoint
 * (`SpeechClient`) in the platform's format (`Outbound.voiceFormat`), the audio's duration is read
 * from its own headers (music-metadata), and the platform's voice message goes out
 * (`Outbound.sendVoice`); the text answer with its sources follows as always.
 *
 * Such an answer is not streamed (`runOptions`): the voice comes first, then the whole text. Any
 * failure — the endpoint unreachable, refusing, a 5xx after the retries, empty or oversized audio,
 * audio whose duration cannot be read, the platform refusing the upload — leaves the text as it is
 * with one short line added ({@link VOICE_FAILED}). The characters sent to the endpoint are counted
 * per person for `/usage` (`UsageStore.recordSpeech`), also when the audio then could not be used.
 */
import { localize, type Localized } from "../i18n.js";
import { SpeechClient, SpeechError, SPEECH_FILES } from "../media/speech.js";
import { spokenText } from "../media/spoken-text.js";
import { audioDurationOf } from "../media/voice.js";
import { localeOf, type AnswerParts, type AnswerState } from "./pipeline.js";

/** The line added to a text answer whose voice reply failed. */
export const VOICE_FAILED: Localized = {
  "zh-TW": "🔇 這次無法產生語音回覆，請看文字。",
  en: "🔇 The voice reply could not be made this time; the answer is in the text.",
};

/**
 * Whether the answer in `state` is to be spoken: the speech endpoint is set (`TTS_BASE_URL`), the
 * platform sends voice messages, the answer is to a user's message (not a task's occurrence nor a
 * resumed approval), and the conversation's voice setting asks for it (`always`, or `when-spoken`
 * for a voice message). Reads the settings *compute* read; false before that.
 */
export function voiceDue(parts: Pick<AnswerParts, "config">, state: AnswerState): boolean {
  const { outbound, kind, message } = state.taken;
  if (!parts.config.TTS_BASE_URL || !outbound.sendVoice || !outbound.voiceFormat || kind !== "message") return false;
  const mode = state.settings?.voice ?? "off";
  return mode === "always" || (mode === "when-spoken" && (message.media ?? []).some((m) => m.kind === "voice"));
}

/**
 * Speaks `answer` (the model's text, without the transcript line or notices) and sends it as the
 * platform's voice message to the answer's destination. The live answer, if it showed anything
 * (a "still trying" notice), is removed first, so the text answer comes after the voice.
 *
 * @returns the line to add to the text answer when the voice reply failed, else undefined (also
 *   when there was nothing to say: an answer that is all code).
 * @throws only what is not the speech endpoint's, the audio's or the platform's failure (a bug); the
 *   deadline passing while speaking is a failure like the others (the text still goes out).
 */
export async function sendVoiceReply(
  parts: AnswerParts,
  state: AnswerState,
  answer: string,
): Promise<string | undefined> {
  const { config } = parts;
  const { outbound, message } = state.taken;
  const locale = localeOf(parts, state);
  const format = outbound.voiceFormat!;
  const { text, cut } = spokenText(answer, locale, config.MAX_TTS_CHARACTERS);
  if (text === "") {
    state.log.info("the answer has nothing to speak (all code, tables or links); no voice reply");
    return undefined;
  }
  const characters = [...text].length;
  const failed = (reason: string, extra: Record<string, unknown> = {}): string => {
    state.log.warn({ characters, format, ...extra, reason }, "the voice reply failed; the text answer goes alone");
    state.tracer.event("speech", { ok: false, characters, format, ...extra });
    return localize(locale, VOICE_FAILED);
  };
  // Counted before the text goes out (`/usage` right after the answer counts it); never holds the answer back.
  await parts.usage
    ?.recordSpeech(message, characters)
    .catch((err: unknown) => state.log.warn({ err }, "could not record the characters spoken"));
  let speech;
  try {
    speech = await new SpeechClient(config).speak({ text, format, signal: state.deadline.signal });
  } catch (error) {
    // The answer's deadline passed while speaking: the answer exists and is stored, so its text still goes out.
    if (state.deadline.signal.aborted && error === state.deadline.signal.reason)
      return failed("the answer's deadline passed while the speech endpoint was answering", { speech: "deadline" });
    if (!(error instanceof SpeechError)) throw error;
    return failed(error.message, {
      speech: error.problem,
      ...(error.status !== undefined ? { status: error.status } : {}),
    });
  }
  const seconds = await audioDurationOf(speech.audio, SPEECH_FILES[format].mimeType);
  if (seconds === undefined || seconds <= 0)
    return failed("the duration of the spoken audio cannot be read from its headers", { bytes: speech.audio.length });
  // Whatever the live answer showed (a "still trying" notice) goes: the voice comes first, then the text.
  if (state.live) {
    await state.live.discard();
    state.live = undefined;
  }
  try {
    await outbound.sendVoice!(state.to, { audio: speech.audio, format, seconds, locale });
  } catch (error) {
    return failed(`the platform did not take the voice message: ${(error as Error).message}`, {
      bytes: speech.audio.length,
      seconds,
    });
  }
  const done = {
    characters,
    cut,
    format,
    bytes: speech.audio.length,
    seconds,
    ms: speech.ms,
    attempts: speech.attempts,
  };
  state.log.info(done, "voice reply sent");
  state.tracer.event("speech", { ok: true, ...done, model: config.TTS_MODEL });
  return undefined;
}
