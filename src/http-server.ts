/**
 * What every HTTP server of the bot shares (the Telegram webhook, `/health`): timeouts that a slow
 * or idle client cannot stretch, a listen on the configured host (`HTTP_HOST`), and a bounded read
 * of a request body.
 */
import type { IncomingMessage, Server, ServerResponse } from "node:http";

/** Time a client has to send the request headers, in ms (Node `server.headersTimeout`). */
export const HEADERS_TIMEOUT_MS = 10_000;
/** Time a client has to send a whole request, in ms (Node `server.requestTimeout`). */
export const REQUEST_TIMEOUT_MS = 30_000;
/** Time an idle keep-alive connection stays open, in ms (Node `server.keepAliveTimeout`). */
export const KEEP_ALIVE_TIMEOUT_MS = 5_000;

/** Sets the timeouts above on `server` and returns it. */
export function withTimeouts(server: Server): Server {
  server.headersTimeout = HEADERS_TIMEOUT_MS;
  server.requestTimeout = REQUEST_TIMEOUT_MS;
  server.keepAliveTimeout = KEEP_ALIVE_TIMEOUT_MS;
  return server;
}

/**
 * Listens on `port` of `host` (`HTTP_HOST`; undefined = every interface, Node's default: `::` with
 * IPv4 too where IPv6 exists, else `0.0.0.0`). Resolves once listening.
 * @throws the listen error (port taken, host not an address of this machine).
 */
export function listen(server: Server, port: number, host: string | undefined): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    const done = () => {
      server.off("error", reject);
      resolve();
    };
    if (host === undefined) server.listen(port, done);
    else server.listen(port, host, done);
  });
}

/** A request body over the limit: answer 413 (see {@link readBody}). */
export class BodyTooLargeError extends Error {
  constructor(readonly limitBytes: number) {
    super(`request body over ${limitBytes} bytes`);
    this.name = "BodyTooLargeError";
  }
}

/**
 * Reads the body of `req` up to `limitBytes` bytes. A `Content-Length` over the limit is refused
 * before any byte is read; a body without one is cut off as soon as it passes the limit.
 * @throws {BodyTooLargeError} over the limit (the rest is never read: answer with
 *   {@link refuseAndClose}); the stream's error when the client goes away.
 */
export function readBody(req: IncomingMessage, limitBytes: number): Promise<Buffer> {
  const declared = Number(req.headers["content-length"]);
  if (Number.isFinite(declared) && declared > limitBytes) return Promise.reject(new BodyTooLargeError(limitBytes));
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limitBytes) {
        req.off("data", onData);
        req.pause();
        reject(new BodyTooLargeError(limitBytes));
        return;
      }
      chunks.push(chunk);
    };
    req.on("data", onData);
    req.once("end", () => resolve(Buffer.concat(chunks)));
    req.once("error", reject);
  });
}

/**
 * Answers `status` with `Connection: close`: Node closes the connection once the answer is sent,
 * so the rest of a refused request body is never read.
 */
export function refuseAndClose(req: IncomingMessage, res: ServerResponse, status: number): void {
  if (res.headersSent) {
    req.destroy();
    return;
  }
  res.writeHead(status, { connection: "close", "content-type": "text/plain" }).end(`${status}\n`);
}
