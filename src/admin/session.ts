/**
 * Logging in to the operator's console (`/admin`, docs/console.md): the token check, one-time
 * login links, and sessions with their CSRF token, kept in Redis so they expire by themselves.
 *
 * Keys (one hash tag, `{admin}`, one Redis Cluster slot), each named by the SHA-256 of its secret so
 * that Redis never holds a usable session id or login code:
 * - `admin:{admin}:session:<sha256 hex>`: a session as JSON, with a TTL of {@link SESSION_TTL_SECONDS};
 * - `admin:{admin}:login:<sha256 hex>`: a one-time login code, with a TTL of {@link LOGIN_LINK_TTL_SECONDS};
 * - `admin:{admin}:fails:<sha256 hex of the client's IP address>`: the times (ms) of its refused logins
 *   in the last {@link LOGIN_FAIL_WINDOW_MS}, a sorted set kept as long as the window.
 */
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import { z } from "zod";
import type { RedisClient } from "../redis.js";

/** How long a session lasts after login, in seconds (8 hours: a working day; then log in again). */
export const SESSION_TTL_SECONDS = 8 * 3600;
/** How long a one-time login link printed at start-up is valid, in seconds (the 10 minutes). */
export const LOGIN_LINK_TTL_SECONDS = 600;

/** Refused logins (wrong token, invalid login link) one IP address may make in {@link LOGIN_FAIL_WINDOW_MS}; more get 429. */
export const LOGIN_FAILS_ALLOWED = 5;
/** The window of {@link LOGIN_FAILS_ALLOWED}, in ms (10 minutes). */
export const LOGIN_FAIL_WINDOW_MS = 10 * 60_000;

const sha256 = (text: string) => createHash("sha256").update(text, "utf8").digest();
const key = (kind: "session" | "login" | "fails", secret: string) =>
  `admin:{admin}:${kind}:${sha256(secret).toString("hex")}`;

/**
 * Whether `given` is the console token `expected`, in time that does not depend on where they
 * differ (both are hashed to 32 bytes first, then compared with `crypto.timingSafeEqual`).
 */
export function tokenMatches(given: string, expected: string): boolean {
  return timingSafeEqual(sha256(given), sha256(expected));
}

const StoredSession = z.object({
  /** The CSRF token every change (POST) of this session must carry. */
  csrf: z.string(),
  /** How the operator logged in. */
  via: z.enum(["token", "link"]),
  /** When, ms since the Unix epoch. */
  createdAt: z.number().int(),
});

/** A console session: its CSRF token, how it logged in, when, and a short name for the log. */
export interface ConsoleSession {
  csrf: string;
  via: "token" | "link";
  createdAt: number;
  /** The first 8 hex digits of the session id's SHA-256: names the session in the log without revealing it. */
  name: string;
}

/** Sessions and one-time login codes of the console (see the module comment). */
export class ConsoleSessions {
  constructor(private readonly redis: RedisClient) {}

  /** Starts a session. @returns its id (the cookie's value, 43 characters) and the session. */
  async create(via: ConsoleSession["via"], now = Date.now()): Promise<{ id: string; session: ConsoleSession }> {
    const id = randomBytes(32).toString("base64url");
    const stored = { csrf: randomBytes(32).toString("base64url"), via, createdAt: now };
    await this.redis.set(key("session", id), JSON.stringify(stored), "EX", SESSION_TTL_SECONDS);
    return { id, session: { ...stored, name: nameOf(id) } };
  }

  /** The session of cookie value `id`, or undefined (unknown, expired, logged out, malformed). */
  async get(id: string | undefined): Promise<ConsoleSession | undefined> {
    if (!id || !/^[A-Za-z0-9_-]{43}$/.test(id)) return undefined;
    const raw = await this.redis.get(key("session", id));
    if (!raw) return undefined;
    try {
      const parsed = StoredSession.safeParse(JSON.parse(raw));
      return parsed.success ? { ...parsed.data, name: nameOf(id) } : undefined;
    } catch {
      return undefined;
    }
  }

  /** Ends the session (logout). */
  async end(id: string): Promise<void> {
    await this.redis.del(key("session", id));
  }

  /** A new one-time login code, valid {@link LOGIN_LINK_TTL_SECONDS}. @returns the code (43 characters). */
  async createLoginCode(): Promise<string> {
    const code = randomBytes(32).toString("base64url");
    await this.redis.set(key("login", code), "1", "EX", LOGIN_LINK_TTL_SECONDS);
    return code;
  }

  /**
   * Whether logins from `ip` are held back: {@link LOGIN_FAILS_ALLOWED} refused logins in the last
   * {@link LOGIN_FAIL_WINDOW_MS} before `now` (ms). A held-back attempt is not counted again.
   * @returns seconds until the next attempt may be made (at least 1), or undefined when it may now.
   */
  async loginHeldBack(ip: string, now = Date.now()): Promise<number | undefined> {
    const times = (
      await this.redis.zrangebyscore(key("fails", ip), now - LOGIN_FAIL_WINDOW_MS + 1, "+inf", "WITHSCORES")
    )
      .filter((_, i) => i % 2 === 1)
      .map(Number);
    if (times.length < LOGIN_FAILS_ALLOWED) return undefined;
    // Free again when all but LOGIN_FAILS_ALLOWED - 1 of them have left the window.
    const freeAt = times[times.length - LOGIN_FAILS_ALLOWED]! + LOGIN_FAIL_WINDOW_MS;
    return Math.max(1, Math.ceil((freeAt - now) / 1000));
  }

  /** Counts one refused login from `ip` at `now` (ms); the record drops times older than the window. */
  async loginRefused(ip: string, now = Date.now()): Promise<void> {
    const k = key("fails", ip);
    await this.redis
      .multi()
      .zremrangebyscore(k, "-inf", now - LOGIN_FAIL_WINDOW_MS)
      .zadd(k, now, `${now}:${randomBytes(6).toString("hex")}`)
      .pexpire(k, LOGIN_FAIL_WINDOW_MS)
      .exec();
  }

  /** Forgets `ip`'s refused logins (after a login that worked). */
  async loginWorked(ip: string): Promise<void> {
    await this.redis.del(key("fails", ip));
  }

  /** Uses up a login code: true the first time within its validity, false afterwards (GETDEL, Redis 6.2+). */
  async useLoginCode(code: string | undefined): Promise<boolean> {
    if (!code || !/^[A-Za-z0-9_-]{43}$/.test(code)) return false;
    return (await this.redis.getdel(key("login", code))) === "1";
  }
}

/** Whether `given` is the session's CSRF token (constant time). */
export function csrfMatches(session: ConsoleSession, given: string | undefined): boolean {
  return typeof given === "string" && given.length > 0 && tokenMatches(given, session.csrf);
}

function nameOf(id: string): string {
  return sha256(id).toString("hex").slice(0, 8);
}
