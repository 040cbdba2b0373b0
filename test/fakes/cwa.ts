/**
 * A small local stand-in for the CWA open-data REST API (`{base}/v1/rest/datastore/F-C0032-001`),
 * serving the recorded responses in `test/fixtures/cwa/` (see its README).
 *
 * It behaves like the real endpoint where the recordings tell us how: the key travels in the
 * `Authorization` request header (a wrong or missing one is a 401), `locationName` filters the
 * locations (comma-separated names allowed, exact match, 臺 not 台), and an unknown name is a
 * success with an empty `location` list. Stricter than the real API on one point: a key in the
 * `Authorization` query parameter (which the real API also takes) is refused with a 400, so a
 * client that puts the key back into the URL, where proxies and access logs keep it, fails the
 * tests. Tests can switch it into failure modes with {@link FakeCwa.mode}.
 */
import { readFileSync } from "node:fs";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import path from "node:path";
import { fileURLToPath } from "node:url";

/** Folder of the recorded responses, kept in the repository (see its README for provenance and licence). */
export const CWA_FIXTURES_DIR = fileURLToPath(new URL("../fixtures/cwa/", import.meta.url));

/** The recorded REST responses by date, and the file-API document. */
export const CWA_FIXTURES = {
  "2026-03-01": "F-C0032-001.2026-03-01.json",
  "2025-03-09": "F-C0032-001.2025-03-09.json",
  fileapi: "fileapi-F-C0032-001.2026-05-05.json",
} as const;

/** Reads and parses one recorded document. */
export function readCwaFixture(name: keyof typeof CWA_FIXTURES): unknown {
  return JSON.parse(readFileSync(path.join(CWA_FIXTURES_DIR, CWA_FIXTURES[name]), "utf8"));
}

/**
 * How the fake answers the next requests.
 * - `ok`: the recorded REST document, filtered by `locationName`;
 * - `reverse`: like `ok`, with every element's time windows in reverse order (the API does not promise order);
 * - `status403` / `status500`: that status with a small JSON body;
 * - `empty`: success with an empty `location` list whatever the name (as for an unknown name);
 * - `success-false`: HTTP 200 with `success: "false"`;
 * - `fileapi`: HTTP 200 with the file-API document (a different shape);
 * - `not-json`: HTTP 200 with an HTML page;
 * - `hang`: never answers (until the client gives up or the server closes).
 */
export type FakeCwaMode =
  "ok" | "reverse" | "empty" | "status403" | "status500" | "success-false" | "fileapi" | "not-json" | "hang";

/** A running fake CWA server. */
export interface FakeCwa {
  /** API base to use as `CWA_API_BASE` (ends in `/api`). */
  base: string;
  /** The only key accepted. */
  key: string;
  /** Current mode; assign to change how later requests are answered. */
  mode: FakeCwaMode;
  /** Which recording `ok`/`reverse` serve. */
  fixture: "2026-03-01" | "2025-03-09";
  /** Every request URL received (path and query), in order. */
  requests: URL[];
  /** The `Authorization` header of each request in {@link requests}, same order (undefined when absent). */
  authorizations: (string | undefined)[];
  close(): Promise<void>;
}

interface RestDocument {
  success: string;
  result?: unknown;
  records: { datasetDescription?: string; location: { locationName: string; weatherElement: { time: unknown[] }[] }[] };
}

function send(res: ServerResponse, status: number, body: unknown, type = "application/json; charset=utf-8"): void {
  const text = typeof body === "string" ? body : JSON.stringify(body);
  res.writeHead(status, { "content-type": type, "content-length": Buffer.byteLength(text) });
  res.end(text);
}

/** Starts the fake on a free local port. */
export async function startFakeCwa(options: { key?: string } = {}): Promise<FakeCwa> {
  const documents = {
    "2026-03-01": readCwaFixture("2026-03-01") as RestDocument,
    "2025-03-09": readCwaFixture("2025-03-09") as RestDocument,
  };
  const fileApi = readCwaFixture("fileapi");
  const hanging = new Set<ServerResponse>();

  const state: Omit<FakeCwa, "base" | "close"> = {
    key: options.key ?? "CWA-TEST-KEY-0123456789",
    mode: "ok",
    fixture: "2026-03-01",
    requests: [],
    authorizations: [],
  };

  const handle = (req: IncomingMessage, res: ServerResponse): void => {
    const url = new URL(req.url ?? "/", "http://fake.invalid");
    state.requests.push(url);
    state.authorizations.push(req.headers.authorization);
    if (req.method !== "GET") return send(res, 405, { message: "Method Not Allowed" });
    if (url.pathname !== "/api/v1/rest/datastore/F-C0032-001")
      return send(res, 404, { message: "no Route matched with those values" });
    if (url.searchParams.has("Authorization"))
      return send(res, 400, { message: "the key belongs in the Authorization header, not the URL" });
    if (req.headers.authorization !== state.key) return send(res, 401, { message: "Unauthorized" });
    switch (state.mode) {
      case "hang":
        hanging.add(res);
        res.on("close", () => hanging.delete(res));
        return;
      case "status403":
        return send(res, 403, { message: "Forbidden" });
      case "status500":
        return send(res, 500, { message: "An unexpected error occurred" });
      case "success-false":
        return send(res, 200, { success: "false", message: "Resource not found" });
      case "fileapi":
        return send(res, 200, fileApi);
      case "not-json":
        return send(res, 200, "<html><body>Service Unavailable</body></html>", "text/html");
      case "empty": {
        const doc = structuredClone(documents[state.fixture]);
        doc.records.location = [];
        return send(res, 200, doc);
      }
      case "ok":
      case "reverse": {
        const doc = structuredClone(documents[state.fixture]);
        const wanted = url.searchParams.get("locationName");
        if (wanted !== null) {
          const names = new Set(wanted.split(",").map((n) => n.trim()));
          doc.records.location = doc.records.location.filter((l) => names.has(l.locationName));
        }
        if (state.mode === "reverse")
          for (const l of doc.records.location) for (const e of l.weatherElement) e.time.reverse();
        return send(res, 200, doc);
      }
    }
  };

  const server = createServer(handle);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  const fake = state as FakeCwa;
  fake.base = `http://127.0.0.1:${port}/api`;
  fake.close = async () => {
    for (const res of hanging) res.destroy();
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  };
  return fake;
}
