/**
 * Voice replies on LINE: an audio message carries no bytes, only `originalContentUrl`, an HTTPS
 * address LINE fetches the audio from (https://developers.line.biz/en/reference/messaging-api/#audio-message:
 * HTTPS, m4a or mp3, at most 200 MB). The worker stores the spoken audio in Redis under a random
 * 128-bit id for {@link LINE_VOICE_TTL_SECONDS} ({@link storeVoice}); the LINE webhook server, in
 * whichever process runs the adapter, serves it at `GET <dir of LINE_WEBHOOK_PATH>/voice/<id>.mp3`
 * ({@link serveVoice}); the public address is `LINE_PUBLIC_URL` followed by that path ({@link voiceUrl}).
 */
import { randomBytes } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import type { RedisClient } from "../../src/redis.js";

/** How long a voice reply's audio can be fetched, seconds (LINE fetches it when the message is shown). */
export const LINE_VOICE_TTL_SECONDS = 3600;
/**
 * Largest audio stored, bytes: the speech client's own limit (25 MB), well under LINE's 200 MB for
 * an audio file (https://developers.line.biz/en/reference/messaging-api/#audio-message).
 */
export const LINE_VOICE_MAX_BYTES = 25 * 1024 * 1024;
/** The audio format asked of the speech endpoint for LINE (LINE plays m4a and mp3; `aac` from the endpoint is raw ADTS, not m4a). */
export const LINE_VOICE_FORMAT = "mp3" as const;
/** The Content-Type the audio is served with. */
export const LINE_VOICE_CONTENT_TYPE = "audio/mpeg";

/** The Redis key of a voice reply's audio. */
export function voiceKey(id: string): string {
  return `line:voice:${id}`;
}

/** The path prefix of voice replies: the directory of `webhookPath` plus `/voice`, e.g. `/line/webhook` → `/line/voice`. */
export function voicePath(webhookPath: string): string {
  const dir = webhookPath.replace(/\/+$/, "").replace(/\/[^/]*$/, "");
  return `${dir}/voice`;
}

/** The public address of voice `id`: `publicUrl` (`LINE_PUBLIC_URL`, no trailing slash) + {@link voicePath} + `/<id>.mp3`. */
export function voiceUrl(publicUrl: string, webhookPath: string, id: string): string {
  return `${publicUrl}${voicePath(webhookPath)}/${id}.mp3`;
}

/**
 * Stores `audio` (mp3) for {@link LINE_VOICE_TTL_SECONDS}.
 * @returns its random id (32 hex digits: 128 bits).
 * @throws {RangeError} when `audio` is empty or over {@link LINE_VOICE_MAX_BYTES}; Redis errors.
 */
export async function storeVoice(redis: RedisClient, audio: Buffer): Promise<string> {
  if (audio.length === 0 || audio.length > LINE_VOICE_MAX_BYTES)
    throw new RangeError(`line: voice audio of ${audio.length} bytes (1 to ${LINE_VOICE_MAX_BYTES} allowed)`);
  const id = randomBytes(16).toString("hex");
  await redis.set(voiceKey(id), audio, "EX", LINE_VOICE_TTL_SECONDS);
  return id;
}

/**
 * Answers `req` when it asks for a voice reply under `prefix` ({@link voicePath}): `GET`/`HEAD` of
 * `<prefix>/<32 hex>.mp3` is 200 with the audio (`audio/mpeg`, `Content-Length`, not cached
 * beyond its life), or 404 when unknown or expired; other methods on such a path are 405.
 * Nothing else under the prefix is listed (404).
 * @returns false when the path is not under `prefix` (the request is not answered), else true.
 */
export function serveVoice(req: IncomingMessage, res: ServerResponse, prefix: string, redis: RedisClient): boolean {
  const path = new URL(req.url ?? "/", "http://x").pathname;
  if (!path.startsWith(`${prefix}/`)) return false;
  const match = /^([0-9a-f]{32})\.mp3$/.exec(path.slice(prefix.length + 1));
  if (!match) {
    res.writeHead(404).end();
    return true;
  }
  if (req.method !== "GET" && req.method !== "HEAD") {
    res.writeHead(405, { allow: "GET, HEAD" }).end();
    return true;
  }
  redis.getBuffer(voiceKey(match[1]!)).then(
    (audio) => {
      if (!audio) return void res.writeHead(404).end();
      res.writeHead(200, {
        "content-type": LINE_VOICE_CONTENT_TYPE,
        "content-length": String(audio.length),
        "cache-control": `private, max-age=${LINE_VOICE_TTL_SECONDS}`,
      });
      res.end(req.method === "HEAD" ? undefined : audio);
    },
    () => {
      if (!res.headersSent) res.writeHead(503).end();
    },
  );
  return true;
}
