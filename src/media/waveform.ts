/**
 * The waveform of a Discord voice message: the audio decoded (Ogg Opus, with ogg-opus-decoder,
 * https://github.com/eshaz/wasm-audio-decoders, WebAssembly: no native build) and cut into equal
 * spans, one byte per span — its loudness (root mean square), scaled so the loudest span is 255 —
 * at most {@link MAX_WAVEFORM_SAMPLES} spans, about one per 100 ms as Discord's own clients record
 * them; base64-encoded as the `waveform` of the message's attachment.
 *
 * Source: https://discord.com/developers/docs/resources/message#attachment-object (`waveform`:
 * "base64 encoded bytearray representing a sampled waveform"; the API takes at most 400 characters).
 */

/** Most samples of a waveform (256 bytes: 344 base64 characters, within the API's 400). */
export const MAX_WAVEFORM_SAMPLES = 256;
/** Length of audio each sample stands for when there is room, in seconds. */
export const WAVEFORM_STEP_SECONDS = 0.1;

/**
 * The base64 waveform of Ogg Opus `audio` (see the module comment).
 * @returns undefined when the audio cannot be decoded or holds no samples.
 */
export async function oggOpusWaveform(audio: Buffer): Promise<string | undefined> {
  const { OggOpusDecoder } = await import("ogg-opus-decoder");
  const decoder = new OggOpusDecoder();
  try {
    await decoder.ready;
    const decoded = await decoder.decodeFile(new Uint8Array(audio));
    const samples = decoded.channelData[0];
    if (!samples || decoded.samplesDecoded === 0) return undefined;
    return waveformOf(samples.subarray(0, decoded.samplesDecoded), decoded.sampleRate);
  } catch {
    return undefined;
  } finally {
    decoder.free();
  }
}

/**
 * The base64 waveform of PCM `samples` (floats, -1..1) at `sampleRate` Hz: one byte per
 * {@link WAVEFORM_STEP_SECONDS} (at most {@link MAX_WAVEFORM_SAMPLES}, at least 1), the RMS of its
 * span scaled to the loudest span's 255 (all 0 for silence).
 */
export function waveformOf(samples: Float32Array, sampleRate: number): string {
  const count = Math.max(
    1,
    Math.min(MAX_WAVEFORM_SAMPLES, Math.ceil(samples.length / (sampleRate * WAVEFORM_STEP_SECONDS))),
  );
  const span = samples.length / count;
  const levels = Array.from({ length: count }, (_, i) => {
    const from = Math.floor(i * span);
    const to = Math.max(from + 1, Math.floor((i + 1) * span));
    let sum = 0;
    for (let j = from; j < to && j < samples.length; j += 1) sum += samples[j]! * samples[j]!;
    return Math.sqrt(sum / (to - from));
  });
  const loudest = Math.max(...levels);
  return Buffer.from(levels.map((level) => (loudest > 0 ? Math.round((level / loudest) * 255) : 0))).toString("base64");
}
