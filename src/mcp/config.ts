/**
 * The MCP servers file (`MCP_CONFIG`, default `mcp.json` at the project root when it exists), in
 * the common `mcpServers` shape, plus our own optional fields per server:
 *
 * ```json
 * { "mcpServers": {
 *     "files": { "command": "npx", "args": ["-y", "@modelcontextprotocol/server-filesystem", "/srv/shared"],
 *                "env": { "LOG": "${FILES_LOG}" }, "cwd": ".", "include": ["read_file", "list_directory"] },
 *     "wiki":  { "url": "https://mcp.example.com/mcp", "headers": { "Authorization": "Bearer ${WIKI_TOKEN}" },
 *                "tags": ["info"], "safe": ["search"], "trustAnnotations": true, "timeoutMs": 20000,
 *                "noAlwaysAllow": ["edit_page"], "loaded": ["search"] } } }
 * ```
 *
 * `${VAR}` in `env` values, `headers` values and `url` is replaced by the environment variable
 * `VAR` (so secrets stay in `.env`); every value substituted this way is registered with the log
 * redaction (`registerSecrets`, 6+ characters; shorter ones only in that server's stderr and errors),
 * so it never reaches a log line, a trace or `npm run tools`. A `url` with `user:pass@` is refused.
 * Transports: stdio (`command`) and Streamable HTTP (`url`); MCP spec
 * https://modelcontextprotocol.io/specification/2025-06-18/basic/transports .
 */
import { existsSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { z } from "zod";
import { registerSecrets } from "../log.js";

/** Default tags of an MCP server's tools (offered in chats, see `src/toolbox/select.ts`). */
export const DEFAULT_MCP_TAGS = ["util"] as const;

/** Default limit of one MCP tool call, in ms (as for our own tools). */
export const DEFAULT_MCP_TIMEOUT_MS = 30_000;

const names = z.array(z.string().min(1)).optional();

/** Our own fields, the same for both transports. */
const ourFields = {
  /** Tags of the server's tools; default {@link DEFAULT_MCP_TAGS}. */
  tags: z.array(z.string().trim().min(1)).min(1).optional(),
  /** Only these tools of the server (their MCP names); default all. */
  include: names,
  /** Leave these tools out (their MCP names). */
  exclude: names,
  /** Tools (MCP names) that run without approval (the operator's decision, whatever the server says). */
  safe: names,
  /**
   * Believe the server's annotations: a tool marked `readOnlyHint: true` (and not also
   * `destructiveHint: true`) runs without approval. Default false: annotations are claims of the
   * server, and only `safe` skips approval.
   */
  trustAnnotations: z.boolean().optional(),
  /** Tools (MCP names) whose approval prompt never offers "always allow". */
  noAlwaysAllow: names,
  /**
   * Tools (MCP names) in front of the model in every request. The server's other tools are
   * deferred: the model finds them with the API's tool search when it needs them.
   */
  loaded: names,
  /** Longest call, in ms (1 s to 10 min); default {@link DEFAULT_MCP_TIMEOUT_MS}. */
  timeoutMs: z.number().int().min(1000).max(600_000).optional(),
};

const StdioServer = z.strictObject({
  type: z.literal("stdio").optional(),
  command: z.string().min(1),
  args: z.array(z.string()).default([]),
  env: z.record(z.string(), z.string()).default({}),
  cwd: z.string().min(1).optional(),
  ...ourFields,
});

const HttpServer = z.strictObject({
  type: z.enum(["http", "streamable-http", "streamableHttp"]).optional(),
  url: z.string().min(1),
  headers: z.record(z.string(), z.string()).default({}),
  ...ourFields,
});

const ServerEntry = z.union([StdioServer, HttpServer], {
  error: () =>
    'must have either "command" (a stdio server: command, args, env, cwd) or "url" (a ' +
    "Streamable HTTP server: url, headers), plus optional tags, include, exclude, safe, " +
    "trustAnnotations, noAlwaysAllow, loaded, timeoutMs",
});

const McpFile = z.strictObject({
  mcpServers: z.record(
    z.string().regex(/^[^\s]{1,64}$/, "a server name is 1-64 characters without spaces"),
    ServerEntry,
  ),
});

/** What every server has, after substitution. */
interface ServerCommon {
  /** The server's name: the key in `mcpServers`. */
  name: string;
  tags: string[];
  include?: string[];
  exclude: string[];
  safe: string[];
  /** Whether the server's `readOnlyHint` may spare a tool the approval (see `mcpToolNeeds`). */
  trustAnnotations: boolean;
  noAlwaysAllow: string[];
  /** Tools (MCP names) loaded in every request; the others are deferred. */
  loaded: string[];
  /** Longest call, in ms. */
  timeoutMs: number;
  /**
   * The values substituted for `${VAR}` in this server's entry, any length: redacted from its
   * stderr and error text even when shorter than `MIN_SECRET_LENGTH` (see `redactValues`).
   */
  secrets: string[];
}

/** A stdio server: a child process speaking MCP on its stdin/stdout. */
export interface StdioServerConfig extends ServerCommon {
  transport: "stdio";
  command: string;
  args: string[];
  /** Extra environment of the child (merged over the SDK's safe default environment). */
  env: Record<string, string>;
  /** Working folder of the child, absolute (a relative `cwd` is taken from the file's folder). */
  cwd?: string;
}

/** A Streamable HTTP server. */
export interface HttpServerConfig extends ServerCommon {
  transport: "http";
  url: URL;
  headers: Record<string, string>;
}

/** One usable server of the file. */
export type McpServerConfig = StdioServerConfig | HttpServerConfig;

/** A server left out before connecting (e.g. a `${VAR}` that is not set), with the reason. */
export interface McpConfigProblem {
  server: string;
  reason: string;
}

/** The file, read: its path, the usable servers and those left out. */
export interface McpConfig {
  /** Absolute path of the file read. */
  file: string;
  servers: McpServerConfig[];
  skipped: McpConfigProblem[];
}

/** The file is unreadable, not JSON or not in the `mcpServers` shape. Start-up stops with it. */
export class McpConfigError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "McpConfigError";
  }
}

/** The project root: the nearest folder above this module with a `package.json` (works from `src/` and `dist/`). */
function projectRoot(): string {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (;;) {
    if (existsSync(path.join(dir, "package.json"))) return dir;
    const up = path.dirname(dir);
    if (up === dir) return process.cwd();
    dir = up;
  }
}

/**
 * The MCP servers file to read: `MCP_CONFIG` (relative to the current folder), or `mcp.json` at
 * the project root when it exists; undefined when there is none (no MCP servers).
 */
export function mcpConfigPath(setting: string | undefined): string | undefined {
  if (setting) return path.resolve(setting);
  const fallback = path.join(projectRoot(), "mcp.json");
  return existsSync(fallback) ? fallback : undefined;
}

const VARIABLE = /\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g;

/**
 * Replaces each `${VAR}` in `text` with `env[VAR]` and registers each value used as a secret.
 *
 * @returns the text, or the names of the variables that are unset or empty.
 */
function substitute(
  text: string,
  env: NodeJS.ProcessEnv,
  usedValues?: string[],
): { ok: true; value: string } | { ok: false; missing: string[] } {
  const missing: string[] = [];
  const used: string[] = [];
  const value = text.replace(VARIABLE, (_whole, name: string) => {
    const v = env[name];
    if (v === undefined || v === "") {
      missing.push(name);
      return "";
    }
    used.push(v);
    return v;
  });
  if (missing.length > 0) return { ok: false, missing: [...new Set(missing)] };
  registerSecrets(used);
  usedValues?.push(...used);
  return { ok: true, value };
}

function substituteAll(
  values: Record<string, string>,
  env: NodeJS.ProcessEnv,
  missing: Set<string>,
  used: string[],
): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [key, text] of Object.entries(values)) {
    const result = substitute(text, env, used);
    if (result.ok) out[key] = result.value;
    else for (const m of result.missing) missing.add(m);
  }
  return out;
}

/**
 * Reads the MCP servers file.
 *
 * @param file - absolute path (see {@link mcpConfigPath}).
 * @param env - where `${VAR}` values come from; default `process.env`.
 * @returns the usable servers and, in `skipped`, the servers whose `${VAR}` is unset or whose URL
 *   is not http(s) or contains credentials (`user:pass@`; each with the reason, naming the variable but never a value).
 * @throws {McpConfigError} naming the file and what is wrong when it cannot be read, is not JSON,
 *   or is not in the `mcpServers` shape (every problem at once, by its path in the file).
 */
export function readMcpConfig(file: string, env: NodeJS.ProcessEnv = process.env): McpConfig {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (error) {
    throw new McpConfigError(
      `MCP_CONFIG: cannot read ${file} (${(error as NodeJS.ErrnoException).code ?? (error as Error).message})`,
    );
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (error) {
    throw new McpConfigError(`MCP_CONFIG: ${file} is not valid JSON: ${(error as Error).message}`);
  }
  const parsed = McpFile.safeParse(json);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  - ${i.path.map(String).join(".") || "(file)"}: ${i.message}`);
    throw new McpConfigError(
      `MCP_CONFIG: ${file} is not a valid MCP servers file ({"mcpServers": {"<name>": {...}}}):\n${lines.join("\n")}`,
    );
  }
  const servers: McpServerConfig[] = [];
  const skipped: McpConfigProblem[] = [];
  for (const [name, entry] of Object.entries(parsed.data.mcpServers)) {
    const common: ServerCommon = {
      name,
      tags: entry.tags ?? [...DEFAULT_MCP_TAGS],
      include: entry.include,
      exclude: entry.exclude ?? [],
      safe: entry.safe ?? [],
      trustAnnotations: entry.trustAnnotations ?? false,
      noAlwaysAllow: entry.noAlwaysAllow ?? [],
      loaded: entry.loaded ?? [],
      timeoutMs: entry.timeoutMs ?? DEFAULT_MCP_TIMEOUT_MS,
      secrets: [],
    };
    const missing = new Set<string>();
    if ("command" in entry) {
      const envValues = substituteAll(entry.env, env, missing, common.secrets);
      if (missing.size > 0) {
        skipped.push({
          server: name,
          reason: `environment variable ${[...missing].join(", ")} is not set (used as \${…} in its env)`,
        });
        continue;
      }
      const cwd = entry.cwd ? path.resolve(path.dirname(file), entry.cwd) : undefined;
      servers.push({
        ...common,
        transport: "stdio",
        command: entry.command,
        args: entry.args,
        env: envValues,
        ...(cwd ? { cwd } : {}),
      });
    } else {
      const url = substitute(entry.url, env, common.secrets);
      if (!url.ok) for (const m of url.missing) missing.add(m);
      const headers = substituteAll(entry.headers, env, missing, common.secrets);
      if (missing.size > 0 || !url.ok) {
        skipped.push({
          server: name,
          reason: `environment variable ${[...missing].join(", ")} is not set (used as \${…} in its url or headers)`,
        });
        continue;
      }
      if (!URL.canParse(url.value) || !["http:", "https:"].includes(new URL(url.value).protocol)) {
        skipped.push({ server: name, reason: "its url is not an http:// or https:// URL" });
        continue;
      }
      const parsedUrl = new URL(url.value);
      if (parsedUrl.username !== "" || parsedUrl.password !== "") {
        // fetch refuses such URLs; never echo the password.
        skipped.push({
          server: name,
          reason:
            'its url contains credentials (user:password@); remove them and send them in "headers" ' +
            'instead (e.g. "Authorization": "Bearer ${TOKEN}" or "Basic …")',
        });
        continue;
      }
      servers.push({ ...common, transport: "http", url: parsedUrl, headers });
    }
  }
  return { file, servers, skipped };
}
