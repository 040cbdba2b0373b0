/**
 * The MCP server `mcp.example.json` starts: a small shared notebook over stdio, written with the
 * official SDK (`McpServer` + `StdioServerTransport`), so the example works after `npm ci` with
 * no network and no account. It is not part of the bot: the bot talks to it like to any MCP
 * server (`node scripts/run.mjs src/mcp/example-server.ts`, from the sources with tsx or from
 * `dist/` in the Docker image).
 *
 * Tools: `read_notes` (read-only; the example lists it in `safe`) and `add_note` (writes, so the
 * bot asks the requester first). Notes are kept in the JSON file `NOTES_FILE` (default
 * `.data/notes.json` under the working folder), at most 200 notes of at most 500 characters.
 *
 * MCP spec: https://modelcontextprotocol.io/specification/2025-06-18/server/tools
 */
import { mkdir, readFile, rename, writeFile } from "node:fs/promises";
import path from "node:path";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { z } from "zod";

/** Most notes kept; adding one more drops the oldest. */
const MAX_NOTES = 200;

const file = path.resolve(process.env.NOTES_FILE ?? path.join(".data", "notes.json"));

const Note = z.object({ text: z.string(), at: z.string() });

async function load(): Promise<z.output<typeof Note>[]> {
  try {
    const parsed = z.array(Note).safeParse(JSON.parse(await readFile(file, "utf8")));
    return parsed.success ? parsed.data : [];
  } catch {
    return []; // no notebook yet
  }
}

async function save(notes: z.output<typeof Note>[]): Promise<void> {
  await mkdir(path.dirname(file), { recursive: true });
  const temporary = `${file}.${process.pid}.tmp`;
  await writeFile(temporary, JSON.stringify(notes, null, 2));
  await rename(temporary, file);
}

const server = new McpServer({ name: "notes", version: "1.0.0" });

server.registerTool(
  "read_notes",
  {
    title: "Read notes",
    description:
      "Read the shared notebook: the latest notes first. Use it when someone asks what was noted. Not for the personal todo list.",
    inputSchema: { limit: z.number().int().min(1).max(50).default(10).describe("how many of the latest notes") },
    annotations: { readOnlyHint: true },
  },
  async ({ limit }) => {
    const notes = (await load()).slice(-limit).reverse();
    const text = notes.length === 0 ? "The notebook is empty." : notes.map((n) => `- ${n.text} (${n.at})`).join("\n");
    return { content: [{ type: "text", text }] };
  },
);

server.registerTool(
  "add_note",
  {
    title: "Add a note",
    description:
      "Add a note to the shared notebook that everyone using the bot can read. Only when someone asks to note something for others.",
    inputSchema: { text: z.string().trim().min(1).max(500).describe("the note, in the user's words") },
    annotations: { readOnlyHint: false, destructiveHint: false },
  },
  async ({ text }) => {
    const notes = [...(await load()), { text, at: new Date().toISOString() }].slice(-MAX_NOTES);
    try {
      await save(notes);
    } catch (error) {
      return {
        content: [
          {
            type: "text",
            text: `The notebook could not be saved: ${(error as NodeJS.ErrnoException).code ?? (error as Error).message}.`,
          },
        ],
        isError: true,
      };
    }
    return { content: [{ type: "text", text: `Noted (${notes.length} notes in the notebook).` }] };
  },
);

await server.connect(new StdioServerTransport());
