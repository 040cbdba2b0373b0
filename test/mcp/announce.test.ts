/**
 * Adapters never connect to MCP servers: a worker announces its MCP tools in Redis, and an
 * adapter-only process lists them (real Redis; a real Streamable HTTP MCP server built with the SDK).
 */
import type { RedisClient } from "../../src/redis.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import {
  announceMcpTools,
  announcementOf,
  followMcpAnnouncements,
  MCP_ANNOUNCE_KEY,
  readMcpAnnouncement,
} from "../../src/mcp/announce.js";
import { readMcpConfig } from "../../src/mcp/config.js";
import { McpToolSource } from "../../src/mcp/source.js";
import { startWorkerMcp } from "../../src/mcp/wiring.js";
import { connectRedis } from "../../src/redis.js";
import { toolboxFor } from "../../src/toolbox/select.js";
import { ToolBox } from "../../src/toolbox/toolbox.js";
import { formatToolList } from "../../src/commands/tools-listing.js";
import { startHttpMcpFixture, type HttpMcpFixture } from "../fixtures/mcp/http-server.js";
import { silentLogger } from "../../src/log.js";
import { testConfig } from "../helpers/config.js";
import { startRedis, type TestRedis } from "../helpers/redis.js";
import { tempDir, waitFor, writeMcpConfig } from "./support.js";

let server: TestRedis;
let redis: RedisClient;
let http: HttpMcpFixture;

beforeAll(async () => {
  server = await startRedis();
  redis = connectRedis(server.url);
  http = await startHttpMcpFixture({ token: "announce-token-000" });
});
afterAll(async () => {
  await http.close();
  await redis.quit();
  await server.stop();
});

const fileTool = {
  name: "get_time",
  description: "The time.",
  input: z.object({}),
  tags: ["info"],
  dangerous: false,
  readOnly: true,
  file: "/p/tools/get_time.ts",
  run: () => "now",
};

describe("MCP announcements", () => {
  it("a worker's MCP tools reach an adapter's /tools listing through Redis, with danger marked", async () => {
    const workerBox = new ToolBox([fileTool]);
    const file = writeMcpConfig(tempDir(), {
      items: { url: http.url, headers: { Authorization: "Bearer announce-token-000" }, trustAnnotations: true },
    });
    const source = new McpToolSource({ config: readMcpConfig(file), toolbox: workerBox });
    await source.start();
    try {
      await announceMcpTools(redis, announcementOf(source, 1234));
      expect(await readMcpAnnouncement(redis)).toEqual({
        at: 1234,
        tools: [
          {
            name: "items__lookup",
            server: "items",
            description: "Look an item up by its name.",
            tags: ["util"],
            dangerous: false,
          },
          {
            name: "items__delete_item",
            server: "items",
            description: "Delete an item by id.",
            tags: ["util"],
            dangerous: true,
          },
        ],
        skipped: [],
      });
      expect(await redis.ttl(MCP_ANNOUNCE_KEY)).toBeGreaterThan(0);

      // The adapter's own toolbox has the files only; it never connects to the server.
      const adapterFiles = new ToolBox([fileTool]);
      const follower = followMcpAnnouncements(redis, adapterFiles, silentLogger, 100);
      try {
        await follower.refresh();
        const listed = toolboxFor(follower.current(), { platform: "telegram", chatKind: "dm" });
        expect(listed.names()).toEqual(["get_time", "items__lookup", "items__delete_item"]);
        const text = formatToolList(listed, "en");
        expect(text).toContain("`items__lookup` — Look an item up by its name.");
        expect(text).toContain("⚠️ `items__delete_item` — Delete an item by id.");
        // an announced tool cannot run in the adapter
        expect(
          (
            await listed.execute("items__lookup", {}, {
              log: silentLogger,
              signal: new AbortController().signal,
            } as never)
          ).content,
        ).toBe("MCP tools run on workers only.");

        // a worker announcing fewer tools (list_changed, a server gone) is followed
        await announceMcpTools(redis, { at: 2, tools: [], skipped: [{ server: "items", reason: "gone" }] });
        await waitFor(() => follower.current().size === 1, 10_000, "the adapter to follow");
        expect(follower.current().names()).toEqual(["get_time"]);
      } finally {
        follower.stop();
      }
      expect(http.calls).toEqual([]);
    } finally {
      await source.close();
    }
  });

  it("a worker whose MCP tool's name is taken by a tools/ file starts; that tool is left out with the reason", async () => {
    await redis.del(MCP_ANNOUNCE_KEY);
    // a tools/ file takes the name of the server's tool "lookup"
    const clashing = { ...fileTool, name: "items__lookup", file: "/p/tools/items__lookup.ts" };
    const file = writeMcpConfig(tempDir(), {
      items: { url: http.url, headers: { Authorization: "Bearer announce-token-000" } },
    });
    const toolbox = new ToolBox([clashing]);
    const started = await startWorkerMcp({
      config: testConfig({ MCP_CONFIG: file }),
      log: silentLogger,
      redis,
      toolbox,
    });
    try {
      await started.connected;
      expect(toolbox.get("items__lookup")).toBe(clashing);
      expect(started.source!.skippedTools).toEqual([
        {
          server: "items",
          tool: "lookup",
          reason:
            'tool name "items__lookup" is defined twice: in /p/tools/items__lookup.ts and in MCP server "items" (tool ' +
            '"lookup"); rename one, or leave one out with "exclude" in the MCP config',
        },
      ]);
      await waitFor(
        async () => (await readMcpAnnouncement(redis))?.tools.map((t) => t.name).join() === "items__delete_item",
        10_000,
        "the announcement",
      );
    } finally {
      await started.close();
    }
  });

  it("a worker announces once its start-up is done, with every server's tools", async () => {
    await redis.del(MCP_ANNOUNCE_KEY);
    const file = writeMcpConfig(tempDir(), {
      items: { url: http.url, headers: { Authorization: "Bearer announce-token-000" } },
    });
    const started = await startWorkerMcp({
      config: testConfig({ MCP_CONFIG: file }),
      log: silentLogger,
      redis,
      toolbox: new ToolBox([fileTool]),
    });
    try {
      await started.connected;
      await waitFor(async () => (await readMcpAnnouncement(redis))?.tools.length === 2, 10_000, "the announcement");
      const announced = await readMcpAnnouncement(redis);
      expect(announced?.tools.map((t) => t.name)).toEqual(["items__lookup", "items__delete_item"]);
      expect(announced?.skipped).toEqual([]);
    } finally {
      await started.close();
    }
  });
});
