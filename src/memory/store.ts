/**
 * The memory store: the files of the memory tool, one record per scope in Redis.
 *
 * A **scope** is whose memory it is, decided by the bot from where and by whom a message was
 * written, never from a path the model sends ({@link memoryScopeOf}):
 * - in a private chat, the speaker's **personal** memory (platform + user id; the same in every
 *   private chat of that person on that platform, Telegram private-chat topics included);
 * - in a group, that **group**'s shared memory (platform + chat id): every member's messages read
 *   and write it, and a Telegram topic shares its group's memory. A Discord thread is a channel of
 *   its own (as for history, `/reset` and grants), so it has its own group memory.
 * A person's personal memory is never read or written while answering in a group.
 *
 * Keys (no expiry: memory is kept until it is erased; `/reset` does not touch it):
 * - `memory:personal:{<platform>:<userId>}` — the hash tag is the person's, as for their todos;
 * - `memory:group:{<platform>:<chatId>}`;
 * - `memory:undo:personal:{…}` / `memory:undo:group:{…}`: how to undo recent writes ({@link undoKey}).
 * The value is one JSON record `{ files: { "<path>": { text, updatedAt } } }` (read through
 * `decodeRecord`). Every change is a compare-and-set of the whole record (a Lua script: the record
 * is replaced only when it is still what the change was computed from, else the change is computed
 * again), so two conversations writing one scope at once (two topics of a group) never lose a
 * write, and the size limit holds for the result. Erasing is one `DEL`: gone for every worker at once.
 */
import { createHash } from "node:crypto";
import { z } from "zod";
import { silentLogger, type Logger } from "../log.js";
import type { Platform } from "../queue/incoming.js";
import { decodeRecord } from "../records.js";
import type { RedisClient } from "../redis.js";
import { UNDO_TTL_SECONDS, UndoRecordSchema, type UndoRecord } from "./undo-record.js";

/** Whose memory: a person's (private chats) or a group's (group chats). */
export type MemoryScope =
  { kind: "personal"; platform: Platform; userId: string } | { kind: "group"; platform: Platform; chatId: string };

/** Most files one scope may hold (a `/memory` listing has a delete button per file; Discord allows 25 buttons). */
export const MAX_MEMORY_FILES = 20;

/** One file of a scope's memory. */
export interface MemoryFile {
  /** Normalised path, `/memories/…` (see `paths.ts`). */
  path: string;
  text: string;
  /** When it was last written, ms since the Unix epoch. */
  updatedAt: number;
}

const RecordSchema = z.object({
  files: z.record(z.string(), z.object({ text: z.string(), updatedAt: z.number() })),
});

/**
 * The scope of a message or command: the speaker's personal memory in a private chat, the group's
 * memory in a group (a Telegram topic shares its group's: `topicId` is not part of it).
 */
export function memoryScopeOf(where: {
  platform: Platform;
  chatKind: "dm" | "group";
  chatId: string;
  userId: string;
}): MemoryScope {
  return where.chatKind === "dm"
    ? { kind: "personal", platform: where.platform, userId: where.userId }
    : { kind: "group", platform: where.platform, chatId: where.chatId };
}

/** The Redis key of a scope's memory (see the module comment). */
export function memoryKey(scope: MemoryScope): string {
  return scope.kind === "personal"
    ? `memory:personal:{${scope.platform}:${scope.userId}}`
    : `memory:group:{${scope.platform}:${scope.chatId}}`;
}

/**
 * The Redis key of the undo records of `scope`'s writes: a hash, field = handle, value = the
 * record (`src/memory/undo.ts`), expiring `UNDO_TTL_SECONDS` after the last write; same hash tag
 * as the scope's memory, and erased with it.
 */
export function undoKey(scope: MemoryScope): string {
  return memoryKey(scope).replace(/^memory:/, "memory:undo:");
}

/**
 * 16 characters (base64url of SHA-256) that change whenever any of `files` (path and text) does:
 * what `/memory`'s "delete all" confirmation carries ({@link MemoryStore.eraseIfUnchanged}).
 */
export function memoryFingerprint(files: Iterable<Pick<MemoryFile, "path" | "text">>): string {
  const sorted = [...files]
    .map(({ path, text }) => [path, text])
    .sort(([a = ""], [b = ""]) => (a < b ? -1 : a > b ? 1 : 0));
  return createHash("sha256").update(JSON.stringify(sorted)).digest("base64url").slice(0, 16);
}

/** `platform:userId` or `platform:chatId` of a scope, for logs and the operator's CLI. */
export function scopeName(scope: MemoryScope): string {
  return scope.kind === "personal" ? `${scope.platform}:${scope.userId}` : `${scope.platform}:${scope.chatId}`;
}

/** Bytes a file counts toward `MEMORY_MAX_BYTES`: UTF-8 bytes of its path and its text. */
export function fileBytes(file: Pick<MemoryFile, "path" | "text">): number {
  return Buffer.byteLength(file.path, "utf8") + Buffer.byteLength(file.text, "utf8");
}

/** Bytes all of `files` count toward `MEMORY_MAX_BYTES`. */
export function totalBytes(files: Iterable<Pick<MemoryFile, "path" | "text">>): number {
  let sum = 0;
  for (const file of files) sum += fileBytes(file);
  return sum;
}

/**
 * KEYS[1]: the scope's key. ARGV[1]: the record the change was computed from ("" = none),
 * ARGV[2]: the new record ("" = delete the key). Replaces the record only when it is unchanged;
 * returns 1 when it did, 0 when another writer came first.
 */
const SWAP_SCRIPT = `
local current = redis.call('GET', KEYS[1])
if current == false then current = '' end
if current ~= ARGV[1] then return 0 end
if ARGV[2] == '' then redis.call('DEL', KEYS[1]) else redis.call('SET', KEYS[1], ARGV[2]) end
return 1
`;

type RedisWithMemory = RedisClient & { memorySwap(key: string, expected: string, next: string): Promise<number> };

/** Tries of a change before it gives up (each try means another writer changed the scope meanwhile); the tries wait a little more each time. */
const MAX_TRIES = 50;

/** What a change computes from the scope's files: the new files (or unchanged) and its result. */
export interface MemoryChange<T> {
  /** The files after the change (path → text); undefined = nothing to write. */
  files?: Map<string, string>;
  result: T;
}

/** The memory of every scope, in Redis (see the module comment). */
export class MemoryStore {
  readonly #redis: RedisWithMemory;
  readonly #log: Logger;
  readonly #now: () => number;

  /** @param redis - a shared connection (commands only). */
  constructor(redis: RedisClient, options: { log?: Logger; now?: () => number } = {}) {
    if (!("memorySwap" in redis)) redis.defineCommand("memorySwap", { numberOfKeys: 1, lua: SWAP_SCRIPT });
    this.#redis = redis as RedisWithMemory;
    this.#log = options.log ?? silentLogger;
    this.#now = options.now ?? Date.now;
  }

  /**
   * The scope's files, by path (sorted). An unreadable record is logged and read as empty.
   * @throws when Redis is unreachable.
   */
  async read(scope: MemoryScope): Promise<MemoryFile[]> {
    return this.#decode(scope, await this.#redis.get(memoryKey(scope)));
  }

  /**
   * Applies `change` to the scope's files atomically: reads them, computes the change, and writes
   * the result only if nobody wrote the scope meanwhile (else computes it again from the new
   * files). `change` may throw (a refused write): nothing is written and the error propagates.
   * Files the change leaves untouched keep their `updatedAt`.
   *
   * @returns the change's result.
   * @throws what `change` throws; an Error when Redis is unreachable or other writers kept winning.
   */
  async update<T>(scope: MemoryScope, change: (files: ReadonlyMap<string, string>) => MemoryChange<T>): Promise<T> {
    const key = memoryKey(scope);
    for (let tries = 0; tries < MAX_TRIES; tries += 1) {
      const raw = await this.#redis.get(key);
      const before = this.#decode(scope, raw);
      const outcome = change(new Map(before.map((f) => [f.path, f.text])));
      if (!outcome.files) return outcome.result;
      const old = new Map(before.map((f) => [f.path, f]));
      const now = this.#now();
      const files: Record<string, { text: string; updatedAt: number }> = {};
      for (const [path, text] of [...outcome.files].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) {
        const kept = old.get(path);
        files[path] = { text, updatedAt: kept && kept.text === text ? kept.updatedAt : now };
      }
      const next = Object.keys(files).length === 0 ? "" : JSON.stringify({ files });
      if ((await this.#redis.memorySwap(key, raw ?? "", next)) === 1) return outcome.result;
      await new Promise((r) => setTimeout(r, Math.random() * Math.min(50, 2 * (tries + 1))));
    }
    throw new Error(`the memory of ${scopeName(scope)} kept changing during a write; try again`);
  }

  /**
   * Removes the file at `path` (normalised) from the scope.
   * @returns true when there was one. @throws when Redis is unreachable.
   */
  async deleteFile(scope: MemoryScope, path: string): Promise<boolean> {
    return this.update(scope, (files) => {
      if (!files.has(path)) return { result: false };
      const next = new Map(files);
      next.delete(path);
      return { files: next, result: true };
    });
  }

  /**
   * Erases the scope's whole memory (one `DEL`: gone for every worker at once).
   * @returns how many files it held. @throws when Redis is unreachable.
   */
  async erase(scope: MemoryScope): Promise<number> {
    const key = memoryKey(scope);
    const files = this.#decode(scope, await this.#redis.get(key));
    await this.#redis.del(key, undoKey(scope));
    return files.length;
  }

  /**
   * Erases the scope's whole memory only when its files are still those `fingerprint` was taken of
   * ({@link memoryFingerprint}): the confirmation of `/memory`'s "delete all" names what it erases,
   * so a memory written or erased since the question is not erased by its answer. Atomic with the
   * other writers (the same swap as {@link update}); the undo records go with the files.
   * @returns how many files were erased, or `"changed"` (nothing erased: no files, or other ones).
   * @throws when Redis is unreachable.
   */
  async eraseIfUnchanged(scope: MemoryScope, fingerprint: string): Promise<number | "changed"> {
    const outcome = await this.update<number | "changed">(scope, (files) =>
      files.size > 0 && memoryFingerprint([...files].map(([path, text]) => ({ path, text }))) === fingerprint
        ? { files: new Map<string, string>(), result: files.size }
        : { result: "changed" as const },
    );
    if (outcome !== "changed") await this.#redis.del(undoKey(scope));
    return outcome;
  }

  /**
   * Records how to undo a write of the scope (`src/memory/undo.ts`) under `handle`, for
   * `UNDO_TTL_SECONDS`. @throws when Redis is unreachable.
   */
  async recordUndo(scope: MemoryScope, handle: string, record: UndoRecord): Promise<void> {
    await this.#redis
      .multi()
      .hset(undoKey(scope), handle, JSON.stringify(record))
      .expire(undoKey(scope), UNDO_TTL_SECONDS)
      .exec();
  }

  /** Whether the write `handle` of the scope can still be undone (its record exists). @throws when Redis is unreachable. */
  async canUndo(scope: MemoryScope, handle: string): Promise<boolean> {
    return (await this.#redis.hexists(undoKey(scope), handle)) === 1;
  }

  /**
   * Undoes the write `handle` of the scope for `userId`: every file it changed goes back to what
   * it was, in one compare-and-set, only when each is still as the write left it; the record is
   * deleted once used.
   *
   * @returns `undone`; `gone` (no record: undone already, or expired); `not_yours` (someone other
   *   than the person whose answer wrote it); `changed` (a file changed since: nothing undone).
   * @throws when Redis is unreachable.
   */
  async undo(scope: MemoryScope, handle: string, userId: string): Promise<"undone" | "gone" | "not_yours" | "changed"> {
    const key = undoKey(scope);
    const record = decodeRecord(UndoRecordSchema, await this.#redis.hget(key, handle), "memory undo", this.#log);
    if (!record) return "gone";
    if (record.userId !== userId) return "not_yours";
    const outcome = await this.update(scope, (files) => {
      if (record.changes.some((c) => (files.get(c.path) ?? null) !== c.after)) return { result: "changed" as const };
      const next = new Map(files);
      for (const c of record.changes) {
        if (c.before === null) next.delete(c.path);
        else next.set(c.path, c.before);
      }
      return { files: next, result: "undone" as const };
    });
    if (outcome === "undone") await this.#redis.hdel(key, handle);
    return outcome;
  }

  #decode(scope: MemoryScope, raw: string | null): MemoryFile[] {
    const record = decodeRecord(RecordSchema, raw, "memory", this.#log, { scope: scopeName(scope) });
    if (!record) return [];
    return Object.entries(record.files)
      .map(([path, f]) => ({ path, text: f.text, updatedAt: f.updatedAt }))
      .sort((a, b) => (a.path < b.path ? -1 : a.path > b.path ? 1 : 0));
  }
}
