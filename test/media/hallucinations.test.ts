/**
 * Issue 38 (8): transcripts that are no speech — what Whisper-style models write for silence
 * (subtitle credits, channel sign-offs, `[BLANK_AUDIO]`) — are told apart from speech by the one
 * list in `src/media/hallucinations.ts`, in Simplified and Traditional forms.
 */
import { describe, expect, it } from "vitest";
import { isNonSpeech, WHISPER_HALLUCINATIONS } from "../../src/media/hallucinations.js";
import { toTraditional } from "../../src/media/voice.js";

describe("isNonSpeech", () => {
  it.each([
    "字幕由Amara.org社区提供",
    "字幕由Amara.org社區提供",
    " 字幕由 Amara.org 社区提供。",
    "请不吝点赞 订阅 转发 打赏支持明镜与点点栏目",
    "請不吝點贊 訂閱 轉發 打賞支持明鏡與點點欄目",
    "明镜与点点栏目 字幕由Amara.org社区提供",
    "[BLANK_AUDIO]",
    "[BLANK_AUDIO] [BLANK_AUDIO]",
    "(音樂) ♪ ♪",
    "[Music]",
    "（掌聲）",
    "*music*",
    "Thanks for watching!",
    "Thank you for watching. Please subscribe to my channel.",
    "you you you",
    "ご視聴ありがとうございました",
    "시청해주셔서 감사합니다!",
    "中文字幕——Yo Yo Television Series Exclusive",
    "",
    " 。 ",
  ])("%j is no speech", (transcript) => {
    expect(isNonSpeech(transcript)).toBe(true);
  });

  it.each([
    "明天早上記得帶傘嗎",
    "謝謝觀看，明天見",
    "字幕由Amara.org社区提供 可是我想問天氣",
    "[笑] 今天好累",
    "thank you",
    "Can you hear me?",
    "謝謝大家",
  ])("%j is speech", (transcript) => {
    expect(isNonSpeech(transcript)).toBe(false);
  });

  it("every Chinese entry's Traditional form (OpenCC, Taiwan usage) is no speech too", async () => {
    const chinese = WHISPER_HALLUCINATIONS.filter(
      (e) => /\p{Script=Han}/u.test(e) && !/[\p{Script=Hiragana}\p{Script=Katakana}]/u.test(e),
    );
    expect(chinese.length).toBeGreaterThan(20);
    for (const entry of chinese) expect(isNonSpeech(await toTraditional(entry))).toBe(true);
  });
});
