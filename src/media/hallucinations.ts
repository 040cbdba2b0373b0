/**
 * Transcripts that are not speech: what Whisper-style models write for a silent or noise-only
 * recording. They learnt it from subtitled videos, so silence comes back as the credits and
 * sign-offs of those videos (`字幕由Amara.org社区提供`, `Thanks for watching!`, `請不吝點贊 訂閱 轉發`)
 * or as the markers subtitles use for sounds (`[BLANK_AUDIO]`, `(音樂)`, `♪`). Such a transcript
 * is refused like an empty one ({@link isNonSpeech}): it never reaches the model or the history.
 *
 * The one list is {@link WHISPER_HALLUCINATIONS}, each Chinese entry in its Simplified and its
 * Traditional forms, also as OpenCC's Taiwan usage writes them (`社區` → `社群`, `支持` → `支援`): the
 * endpoint may write any of them.
 *
 * Sources: the silence hallucinations projects using Whisper report, e.g.
 * https://github.com/amicalhq/amical/issues/71 (Japanese sign-offs),
 * https://github.com/Vexa-ai/vexa/issues/617 (phrase lists per language),
 * https://github.com/PocketShell-io/pocketshell/issues/452 (Korean); issue 38 of this project
 * (`字幕由Amara.org社区提供`, `[BLANK_AUDIO]` from whisper.cpp, channel credits).
 */

/**
 * Whole transcripts that a Whisper-style model writes for silence or noise. A transcript made only
 * of these (any of them, repeated or combined, with any punctuation, spacing or case) is no speech.
 */
export const WHISPER_HALLUCINATIONS: readonly string[] = [
  // Subtitle credits from the Amara.org community (Simplified, Traditional, and the reworded Traditional one).
  "字幕由Amara.org社区提供",
  "字幕由Amara.org社區提供",
  "字幕由Amara.org社群提供",
  "小编字幕由Amara.org社区提供",
  "小編字幕由Amara.org社區提供",
  "小編字幕由Amara.org社群提供",
  "由 Amara.org 社群提供的字幕",
  "由Amara.org社区提供的字幕",
  "Subtitles by the Amara.org community",
  // Channel sign-offs and credits of Chinese video channels.
  "请不吝点赞 订阅 转发 打赏支持明镜与点点栏目",
  "請不吝點贊 訂閱 轉發 打賞支持明鏡與點點欄目",
  "請不吝點讚 訂閱 轉發 打賞支持明鏡與點點欄目",
  "請不吝點贊 訂閱 轉發 打賞支援明鏡與點點欄目",
  "請不吝點讚 訂閱 轉發 打賞支援明鏡與點點欄目",
  "明镜与点点栏目",
  "明鏡與點點欄目",
  "请不吝点赞 订阅 转发",
  "請不吝點贊 訂閱 轉發",
  "點贊 訂閱 轉發 打賞",
  "点赞 订阅 转发 打赏",
  "中文字幕——Yo Yo Television Series Exclusive",
  "优优独播剧场——YoYo Television Series Exclusive",
  "優優獨播劇場——YoYo Television Series Exclusive",
  "字幕志愿者 李宗盛",
  "字幕志願者 李宗盛",
  "字幕志愿者 杨茜茜",
  "字幕志願者 楊茜茜",
  "谢谢观看",
  "謝謝觀看",
  "感谢观看",
  "感謝觀看",
  "谢谢收看",
  "謝謝收看",
  "下集再见",
  "下集再見",
  "订阅我的频道",
  "訂閱我的頻道",
  // English, Japanese and Korean sign-offs and credits.
  "Thanks for watching",
  "Thank you for watching",
  "Thanks for watching and see you next time",
  "Please subscribe to my channel",
  "Please like and subscribe",
  "Transcription by CastingWords",
  "you",
  "ご視聴ありがとうございました",
  "次の動画でお会いしましょう",
  "チャンネル登録をお願いします",
  "시청해주셔서 감사합니다",
];

/**
 * A marker of sound that is not speech, as subtitles and whisper.cpp write them: anything in
 * brackets or parentheses (`[BLANK_AUDIO]`, `[Music]`, `(silence)`, `（音樂）`, `【掌聲】`), a
 * part between asterisks (`*music*`), and music notes.
 */
const MARKERS = /\[[^\]]*\]|\([^)]*\)|（[^）]*）|【[^】]*】|\*[^*]*\*|[♪♫♩♬🎵🎶]/gu;

/** What a transcript is compared by: compatibility forms folded, lower case, letters and digits only. */
function bare(text: string): string {
  return text
    .normalize("NFKC")
    .toLowerCase()
    .replace(/[^\p{L}\p{N}]/gu, "");
}

/** The hallucinations as {@link bare} text, longest first (so a long one is removed before a part of it). */
const BARE_HALLUCINATIONS = [...new Set(WHISPER_HALLUCINATIONS.map(bare))].sort((a, b) => b.length - a.length);

/**
 * Whether a transcript holds no speech: nothing but non-speech markers ({@link MARKERS}),
 * punctuation and spacing, and known hallucinations ({@link WHISPER_HALLUCINATIONS}, in any
 * number and order). A transcript with any other word is speech, even if it also holds one of them
 * (`謝謝觀看，明天見` is kept whole).
 *
 * @param transcript - the transcript as the endpoint wrote it, or converted to Traditional.
 * @returns true for an empty transcript too. Never throws.
 */
export function isNonSpeech(transcript: string): boolean {
  let rest = bare(transcript.replace(MARKERS, " "));
  for (const phrase of BARE_HALLUCINATIONS) rest = rest.split(phrase).join("");
  return rest === "";
}
