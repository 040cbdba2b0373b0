/**
 * MCP hardening found by a tester: multi-line and short `${VAR}` secrets in a server's stderr,
 * URL-encoded secrets, credentials in an MCP `url`, typos in the config's tool-name lists and a
 * missing `cwd`. Against the real stdio fixture server (official SDK).
 */
import { afterEach, describe, expect, it } from "vitest";
import { redact, registerSecrets } from "../../src/log.js";
import { readMcpConfig } from "../../src/mcp/config.js";
import { McpToolSource } from "../../src/mcp/source.js";
import { ToolBox } from "../../src/toolbox/toolbox.js";
import { captureLogger } from "../helpers/log.js";
import { stdioEntry, tempDir, writeMcpConfig } from "./support.js";

const rand = () => Math.random().toString(36).slice(2, 12);
const PEM_LINES = ["-----BEGIN KEY-----", `MIIEvQ${rand()}${rand()}`, `Zx9k${rand()}${rand()}`, "-----END KEY-----"];
const PEM = PEM_LINES.join("\n");
const SHORT = "12345";
const sources: McpToolSource[] = [];
afterEach(async () => {
  for (const s of sources.splice(0)) await s.close();
});

async function start(servers: Record<string, unknown>, env: NodeJS.ProcessEnv = {}) {
  const file = writeMcpConfig(tempDir(), servers);
  const { log, lines } = captureLogger("debug");
  const source = new McpToolSource({
    config: readMcpConfig(file, { ...process.env, ...env }),
    toolbox: new ToolBox(),
    log,
  });
  sources.push(source);
  await source.start();
  return { source, lines, file };
}

describe("secret redaction", () => {
  it("a multi-line secret is registered per line, so lines joined with ' | ' are still redacted", () => {
    registerSecrets([PEM]);
    expect(redact(`stderr: ${PEM_LINES.join(" | ")}`)).toBe(
      "stderr: [redacted] | [redacted] | [redacted] | [redacted]",
    );
    expect(redact(`x ${PEM} y`)).toBe("x [redacted] y");
  });

  it("the URL-encoded form of a secret is redacted (upper- and lower-case %xx)", () => {
    registerSecrets(["secret/with+chars="]);
    expect(redact("GET /x?k=secret%2Fwith%2Bchars%3D&a=1")).toBe("GET /x?k=[redacted]&a=1");
    expect(redact("GET /x?k=secret%2fwith%2bchars%3d")).toBe("GET /x?k=[redacted]");
  });

  it("URL userinfo is redacted wherever a URL is printed", () => {
    expect(redact("fetch http://user:PASS@host:8080/mcp failed")).toBe("fetch http://[redacted]@host:8080/mcp failed");
    expect(redact("mail me at someone@example.com, see https://example.com/a@b")).toBe(
      "mail me at someone@example.com, see https://example.com/a@b",
    );
  });

  it("a multi-line secret a server writes to stderr stays out of the skip reason and the log", async () => {
    const { source, lines } = await start(
      { broken: stdioEntry({ env: { FIXTURE_TOKEN: "${PEM_VALUE}", FAIL_AT_START: "1" } }) },
      { PEM_VALUE: PEM },
    );
    const reason = source.skipped.find((s) => s.server === "broken")!.reason;
    expect(reason).toContain("fatal: the backend rejected token [redacted] | [redacted] | [redacted] | [redacted]");
    for (const line of PEM_LINES) {
      expect(reason).not.toContain(line);
      expect(lines.join("\n")).not.toContain(line);
    }
  }, 60_000);

  it("a secret shorter than 6 characters is redacted from that server's stderr and errors (not from every log line)", async () => {
    const { source, lines } = await start(
      { broken: stdioEntry({ env: { FIXTURE_TOKEN: "${SHORT_VALUE}", FAIL_AT_START: "1" } }) },
      { SHORT_VALUE: SHORT },
    );
    const reason = source.skipped.find((s) => s.server === "broken")!.reason;
    expect(reason).toContain("fatal: the backend rejected token [redacted]");
    expect(reason).not.toContain(SHORT);
    expect(lines.join("\n")).not.toContain(`token ${SHORT}`);
    expect(redact(`order ${SHORT}`)).toBe(`order ${SHORT}`);
  }, 60_000);
});

describe("MCP config checks", () => {
  it("a url with user:password is refused with a hint to use headers, never echoing the password", () => {
    const file = writeMcpConfig(tempDir(), {
      wiki: { url: "http://user:${WIKI_PASS}@host/mcp" },
      lit: { url: "https://bob:hunter2pass@host/mcp" },
    });
    const config = readMcpConfig(file, { WIKI_PASS: "s3cr3t-pass" });
    expect(config.servers).toEqual([]);
    const reason =
      'its url contains credentials (user:password@); remove them and send them in "headers" instead (e.g. "Authorization": "Bearer ${TOKEN}" or "Basic …")';
    expect(config.skipped).toEqual([
      { server: "wiki", reason },
      { server: "lit", reason },
    ]);
    expect(JSON.stringify(config)).not.toContain("hunter2pass");
    expect(JSON.stringify(config)).not.toContain("s3cr3t-pass");
  });

  it("a cwd that does not exist skips the server with that reason (not spawn ENOENT)", async () => {
    const { source } = await start({ notebook: stdioEntry({ cwd: "no-such-folder" }) });
    expect(source.skipped).toHaveLength(1);
    expect(source.skipped[0]!.server).toBe("notebook");
    expect(source.skipped[0]!.reason).toMatch(/^cwd \/.*\/no-such-folder does not exist \(or is not a folder\)$/);
  }, 60_000);

  it("names in include/exclude/safe/noAlwaysAllow that match no tool are warned once per server (npm run tools: see tools-cli.test.ts)", async () => {
    const { source, lines } = await start({
      notebook: stdioEntry({
        include: ["echo", "ecoh", "add_note"],
        exclude: ["nope"],
        safe: ["add_notes", "stats"],
        noAlwaysAllow: ["ad_note"],
      }),
    });
    const expected = [
      expect.stringMatching(/^MCP server notebook has no tool "ecoh" \(named in its "include"; its tools: /),
      expect.stringMatching(/^MCP server notebook has no tool "nope" \(named in its "exclude"; /),
      expect.stringMatching(/^MCP server notebook has no tool "add_notes" \(named in its "safe"; /),
      expect.stringMatching(/^MCP server notebook has no tool "ad_note" \(named in its "noAlwaysAllow"; /),
      'MCP server notebook: "stats" in its "safe" is not in its "include", so it is not offered at all',
    ];
    expect(source.nameWarnings).toEqual(expected);
    const warned = lines
      .map((l) => JSON.parse(l) as { level: number; msg: string })
      .filter((l) => l.level === 40)
      .map((l) => l.msg);
    expect(warned).toEqual(expected);
    expect(source.tools()[0]!.tools.map((t) => t.mcp.tool)).toEqual(["echo", "add_note"]);
  }, 60_000);
});
