/**
 * The MCP servers file: the `mcpServers` shape with our fields, `${VAR}` from the environment
 * (registered as secrets), and clear errors for a malformed file.
 */
import { writeFileSync } from "node:fs";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { DEFAULT_MCP_TIMEOUT_MS, McpConfigError, mcpConfigPath, readMcpConfig } from "../../src/mcp/config.js";
import { redact } from "../../src/log.js";
import { mcpToolName } from "../../src/mcp/tools.js";
import { tempDir, writeMcpConfig } from "./support.js";

describe("readMcpConfig", () => {
  it("reads stdio and HTTP servers with defaults, substitutes ${VAR} and registers the values as secrets", () => {
    const dir = tempDir();
    const file = writeMcpConfig(dir, {
      files: { command: "npx", args: ["-y", "server"], env: { API_KEY: "${FILES_KEY}", MODE: "ro" }, cwd: "srv" },
      wiki: {
        type: "http",
        url: "https://${WIKI_HOST}/mcp",
        headers: { Authorization: "Bearer ${WIKI_TOKEN}" },
        tags: ["info"],
        include: ["search"],
        safe: ["search"],
        noAlwaysAllow: ["edit"],
        loaded: ["search"],
        timeoutMs: 5000,
      },
    });
    const config = readMcpConfig(file, {
      FILES_KEY: "files-key-abcdef",
      WIKI_HOST: "wiki.example.com",
      WIKI_TOKEN: "wiki-token-123456",
    });
    expect(config.skipped).toEqual([]);
    expect(config.servers).toEqual([
      {
        name: "files",
        transport: "stdio",
        command: "npx",
        args: ["-y", "server"],
        env: { API_KEY: "files-key-abcdef", MODE: "ro" },
        cwd: path.join(dir, "srv"),
        tags: ["util"],
        exclude: [],
        safe: [],
        trustAnnotations: false,
        noAlwaysAllow: [],
        loaded: [],
        timeoutMs: DEFAULT_MCP_TIMEOUT_MS,
        secrets: ["files-key-abcdef"],
      },
      {
        name: "wiki",
        transport: "http",
        url: new URL("https://wiki.example.com/mcp"),
        headers: { Authorization: "Bearer wiki-token-123456" },
        tags: ["info"],
        include: ["search"],
        exclude: [],
        safe: ["search"],
        trustAnnotations: false,
        noAlwaysAllow: ["edit"],
        loaded: ["search"],
        timeoutMs: 5000,
        secrets: ["wiki.example.com", "wiki-token-123456"],
      },
    ]);
    expect(redact("key files-key-abcdef token wiki-token-123456")).toBe("key [redacted] token [redacted]");
  });

  it("skips a server whose variable is unset, naming the variable, never a value", () => {
    const file = writeMcpConfig(tempDir(), {
      a: { command: "x", env: { K: "${MISSING_ONE}" } },
      b: { url: "${MISSING_URL}", headers: { H: "${MISSING_TWO}" } },
      c: { url: "ftp://example.com" },
    });
    expect(readMcpConfig(file, {})).toMatchObject({
      servers: [],
      skipped: [
        { server: "a", reason: "environment variable MISSING_ONE is not set (used as ${…} in its env)" },
        {
          server: "b",
          reason: "environment variable MISSING_URL, MISSING_TWO is not set (used as ${…} in its url or headers)",
        },
        { server: "c", reason: "its url is not an http:// or https:// URL" },
      ],
    });
  });

  it("a malformed file stops start-up with every problem named by its path", () => {
    const dir = tempDir();
    const bad = writeMcpConfig(dir, {
      ok: { command: "x" },
      typo: { command: "x", inclde: ["a"] },
      none: { args: [] },
      slow: { url: "http://a", timeoutMs: 10 },
    });
    const error = (() => {
      try {
        readMcpConfig(bad, {});
      } catch (e) {
        return e as Error;
      }
    })();
    expect(error).toBeInstanceOf(McpConfigError);
    expect(error!.message).toContain(`MCP_CONFIG: ${bad} is not a valid MCP servers file`);
    expect(error!.message).toContain('mcpServers.typo: Unrecognized key: "inclde"');
    expect(error!.message).toContain(
      'mcpServers.none: must have either "command" (a stdio server: command, args, env, cwd) or "url"',
    );
    expect(error!.message).toContain("mcpServers.slow.timeoutMs: Too small: expected number to be >=1000");
    expect(error!.message).not.toContain("mcpServers.ok");
    expect(() => readMcpConfig(path.join(dir, "nope.json"))).toThrow(/MCP_CONFIG: cannot read .*nope\.json \(ENOENT\)/);
    const notJson = writeMcpConfig(dir, {});
    writeFileSync(notJson, "{ nope");
    expect(() => readMcpConfig(notJson)).toThrow(/is not valid JSON/);
  });

  it("MCP_CONFIG is resolved from the current folder; without it, no root mcp.json means no MCP", () => {
    expect(mcpConfigPath("conf/mcp.json")).toBe(path.resolve("conf/mcp.json"));
    expect(mcpConfigPath(undefined)).toBeUndefined();
  });

  it("tool names are <server>__<tool>, made valid for the Messages API", () => {
    expect(mcpToolName("files", "read_file")).toBe("files__read_file");
    expect(mcpToolName("my.wiki", "get page")).toBe("my_wiki__get_page");
    expect(mcpToolName("s", "x".repeat(80))).toHaveLength(64);
  });
});
