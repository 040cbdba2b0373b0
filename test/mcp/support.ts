/**
 * Helpers of the MCP tests: the fixture servers' commands and a temporary MCP config file.
 */
import { mkdtempSync, readFileSync, existsSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { nodeArgs } from "../helpers/compiled.js";

/** The stdio fixture server (a real MCP server built with the official SDK). */
export const STDIO_FIXTURE = fileURLToPath(new URL("../fixtures/mcp/stdio-server.ts", import.meta.url));

/** The `mcpServers` entry that runs the stdio fixture with node (its compiled JavaScript, see `nodeArgs`). */
export function stdioEntry(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { command: process.execPath, args: nodeArgs(STDIO_FIXTURE), ...extra };
}

/** A fresh folder for one test's files. */
export function tempDir(): string {
  return mkdtempSync(path.join(tmpdir(), "mcp-test-"));
}

/** Writes `{ mcpServers: servers }` to `<dir>/mcp.json` and returns its path. */
export function writeMcpConfig(dir: string, servers: Record<string, unknown>): string {
  const file = path.join(dir, "mcp.json");
  writeFileSync(file, JSON.stringify({ mcpServers: servers }, null, 2));
  return file;
}

/** The calls the stdio fixture recorded in `file` (one JSON line each). */
export function recordedCalls(file: string): { tool: string; args: Record<string, unknown>; pid: number }[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, "utf8")
    .split("\n")
    .filter((l) => l.trim() !== "")
    .map((l) => JSON.parse(l) as { tool: string; args: Record<string, unknown>; pid: number });
}

/** Polls `check` every 50 ms until it returns true, or fails after `timeoutMs`. */
export async function waitFor(
  check: () => boolean | Promise<boolean>,
  timeoutMs = 20_000,
  what = "a condition",
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The hostile fixture server (official SDK): tools real servers ship that the Messages API refuses, and a server that changes its claims. */
export const HOSTILE_FIXTURE = fileURLToPath(new URL("../fixtures/mcp/hostile-server.ts", import.meta.url));

/** The `mcpServers` entry that runs the hostile fixture with `node --import tsx`. */
export function hostileEntry(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { command: process.execPath, args: ["--import", "tsx", HOSTILE_FIXTURE], ...extra };
}
