/**
 * What the workers tell the adapters about MCP tools. Adapters never connect to MCP servers; a
 * worker writes the MCP tools it registered to one Redis key after start-up and after every
 * change, and an adapter-only process reads it (for `/tools` and `/help`). The last worker to
 * write wins: workers share one MCP config, so they announce the same tools.
 */
import type { RedisClient } from "../redis.js";
import { z } from "zod";
import type { Logger } from "../log.js";
import { JsonSchemaInput } from "../toolbox/json-input.js";
import { ToolError, type Tool } from "../toolbox/tool.js";
import { ToolBox } from "../toolbox/toolbox.js";
import type { McpToolSource } from "./source.js";
import { mcpSource } from "./tools.js";

/** The Redis key of the announcement (a global key with its own hash tag). */
export const MCP_ANNOUNCE_KEY = "mcp:{tools}";

/** How long an announcement lives without being renewed, in seconds (a worker renews it on each change and at start-up). */
const MCP_ANNOUNCE_TTL_SECONDS = 7 * 24 * 3600;

const Announcement = z.object({
  at: z.number(),
  tools: z.array(
    z.object({
      name: z.string(),
      server: z.string(),
      description: z.string(),
      tags: z.array(z.string()),
      dangerous: z.boolean(),
    }),
  ),
  skipped: z.array(z.object({ server: z.string(), reason: z.string() })),
});

/** The announcement: MCP tools registered by a worker, and the servers it skipped. */
export type McpAnnouncement = z.output<typeof Announcement>;

/** The announcement of `source`'s current tools. */
export function announcementOf(source: McpToolSource, now = Date.now()): McpAnnouncement {
  return {
    at: now,
    tools: source.tools().flatMap(({ server, tools }) =>
      tools.map((t) => ({
        name: t.name,
        server,
        description: t.description,
        tags: [...t.tags],
        dangerous: t.dangerous,
      })),
    ),
    skipped: source.skipped,
  };
}

/** Writes the announcement. @throws when Redis is unreachable. */
export async function announceMcpTools(redis: RedisClient, announcement: McpAnnouncement): Promise<void> {
  await redis.set(MCP_ANNOUNCE_KEY, JSON.stringify(announcement), "EX", MCP_ANNOUNCE_TTL_SECONDS);
}

/** Reads the announcement; undefined when none (or unreadable). @throws when Redis is unreachable. */
export async function readMcpAnnouncement(redis: RedisClient): Promise<McpAnnouncement | undefined> {
  const raw = await redis.get(MCP_ANNOUNCE_KEY);
  if (!raw) return undefined;
  try {
    const parsed = Announcement.safeParse(JSON.parse(raw));
    return parsed.success ? parsed.data : undefined;
  } catch {
    return undefined;
  }
}

/** The input of every announced tool: any object (adapters list these tools, never validate a call). */
const ANY_OBJECT_INPUT = JsonSchemaInput.listed({ type: "object" });

/**
 * Tools standing for announced MCP tools in an adapter's toolbox: name, description, tags and
 * danger for listings; they cannot run (an adapter never calls a tool).
 */
function announcedTools(announcement: McpAnnouncement): Tool[] {
  return announcement.tools.map((t) => ({
    name: t.name,
    description: t.description,
    tags: t.tags,
    dangerous: t.dangerous,
    readOnly: false,
    input: ANY_OBJECT_INPUT,
    file: `<mcp:${t.server}>`,
    source: mcpSource(t.server),
    run: () => {
      throw new ToolError("MCP tools run on workers only.");
    },
  }));
}

/**
 * Keeps an adapter's view of the tools current: `files` (the tools of `tools/`) plus the MCP
 * tools the workers announced, read now and every `intervalMs` (default 30 s).
 *
 * @returns `current()` (the toolbox to list) and `stop()`.
 */
export function followMcpAnnouncements(
  redis: RedisClient,
  files: ToolBox,
  log: Logger,
  intervalMs = 30_000,
): { current: () => ToolBox; refresh: () => Promise<void>; stop: () => void } {
  let current = files;
  let last = "";
  const refresh = async () => {
    try {
      const announcement = await readMcpAnnouncement(redis);
      const key = JSON.stringify(announcement?.tools ?? []);
      if (key === last) return;
      last = key;
      const box = new ToolBox(files.list(), { log });
      for (const tool of announcedTools(announcement ?? { at: 0, tools: [], skipped: [] }))
        if (!box.get(tool.name)) box.add(tool);
      current = box;
    } catch (error) {
      log.debug({ err: error }, "reading the MCP tools announced by the workers failed");
    }
  };
  const timer = setInterval(() => void refresh(), intervalMs);
  timer.unref();
  return { current: () => current, refresh, stop: () => clearInterval(timer) };
}
