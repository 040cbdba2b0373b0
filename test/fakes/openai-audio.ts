/**
 * What the strict fakes of OpenAI's audio endpoints ({@link ./speech.ts}, {@link ./transcription.ts})
 * share: one loopback server for one `POST` path, OpenAI's error shape
 * (`{ "error": { "message", "type", "param", "code" } }`, https://platform.openai.com/docs/guides/error-codes),
 * the 404 for any other path or method, the 401 `invalid_api_key` for a missing or wrong
 * `Authorization: Bearer <key>`, a record of every request, queued failures, hanging answers,
 * and stopping and starting to listen on the same port.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";

/** What every request record of an OpenAI audio fake holds. */
export interface OpenAiFakeRequest {
  /** The status it was answered with (-1: left hanging). */
  status: number;
  /** The `Authorization` header, as sent (tests check the key travelled only there). */
  authorization: string | undefined;
  contentType: string | undefined;
}

/** A failure the fakes answer in the same way: a status with OpenAI's error body (or `body`), or a hang. */
export type OpenAiFakeFailure = { status: number; body?: unknown; headers?: Record<string, string> } | "hang";

/** One request being answered, as given to the fake's own checks ({@link startOpenAiFake}'s `handle`). */
export interface OpenAiFakeCall<R extends OpenAiFakeRequest, F> {
  req: IncomingMessage;
  res: ServerResponse;
  /** The whole request body. */
  bytes: Buffer;
  /** Its record, pushed to `requests` when it is answered (tests read it there). */
  record: R;
  /** Records `status` and runs `send`, which writes the answer. */
  answer(status: number, send: () => void): void;
  /** Answers `status` with OpenAI's error body. */
  refuse(status: number, message: string, param?: string | null, code?: string | null): void;
  /** The next queued failure ({@link OpenAiFake.failNext}), if any: call it only once a request would be accepted. */
  nextFailure(): F | undefined;
  /** Answers a `"hang"` or status failure; @returns false (nothing sent) for any other failure. */
  fail(failure: F): boolean;
}

/** The running server: the parts every OpenAI audio fake exposes. */
export interface OpenAiFake<R extends OpenAiFakeRequest, F> {
  /** What to use as the client's base URL (ends in `/v1`). */
  base: string;
  /** The only key accepted. */
  key: string;
  /** Every request, in order. */
  requests: R[];
  /** Fails the next `count` requests (default 1) that would have been accepted. */
  failNext(failure: F, count?: number): void;
  /** Stops listening (connections are refused) until {@link up}. */
  down(): Promise<void>;
  /** Listens again on the same port. */
  up(): Promise<void>;
  close(): Promise<void>;
}

/** Writes OpenAI's error body with `status` (type `server_error` from 500, else `invalid_request_error`). */
export function openAiError(
  res: ServerResponse,
  status: number,
  message: string,
  param: string | null = null,
  code: string | null = null,
): void {
  const text = JSON.stringify({
    error: { message, type: status >= 500 ? "server_error" : "invalid_request_error", param, code },
  });
  res.writeHead(status, { "content-type": "application/json", "content-length": Buffer.byteLength(text) }).end(text);
}

/** OpenAI's message for a model that does not exist (param `model`, code `model_not_found`). */
export function modelNotFound(model: string): string {
  return `The model \`${model}\` does not exist or you do not have access to it.`;
}

/**
 * Starts a fake for `POST {path}` on a free loopback port. It answers other paths and methods 404
 * and a missing or wrong key 401, then hands each request to `handle` with its whole body.
 * @param options.path - the one path served, e.g. `/v1/audio/speech`.
 * @param options.key - the only key accepted as `Authorization: Bearer <key>`.
 * @param options.record - the fields of a new request record beyond {@link OpenAiFakeRequest}'s.
 */
export async function startOpenAiFake<R extends OpenAiFakeRequest, F extends OpenAiFakeFailure | string>(options: {
  path: string;
  key: string;
  record: (base: OpenAiFakeRequest) => R;
  handle: (call: OpenAiFakeCall<R, F>) => Promise<void> | void;
}): Promise<OpenAiFake<R, F>> {
  const { key } = options;
  const failures: F[] = [];
  const hanging = new Set<ServerResponse>();
  const requests: R[] = [];

  const serve = async (req: IncomingMessage, res: ServerResponse): Promise<void> => {
    const record = options.record({
      status: 0,
      authorization: req.headers.authorization,
      contentType: req.headers["content-type"],
    });
    const answer = (status: number, send: () => void) => {
      record.status = status;
      requests.push(record);
      send();
    };
    const refuse = (status: number, message: string, param: string | null = null, code: string | null = null) =>
      answer(status, () => openAiError(res, status, message, param, code));
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const url = new URL(req.url ?? "/", "http://fake");
    if (req.method !== "POST" || url.pathname !== options.path)
      return refuse(404, `Invalid URL (${req.method} ${url.pathname})`);
    if (req.headers.authorization !== `Bearer ${key}`)
      return refuse(
        401,
        req.headers.authorization ? "Incorrect API key provided." : "You didn't provide an API key.",
        null,
        "invalid_api_key",
      );
    const fail = (failure: F): boolean => {
      if (failure === "hang") {
        record.status = -1;
        requests.push(record);
        hanging.add(res);
        return true;
      }
      if (typeof failure !== "object") return false;
      const { status, body, headers } = failure as Exclude<OpenAiFakeFailure, "hang">;
      answer(status, () => {
        const text = JSON.stringify(
          body ?? {
            error: {
              message: `failure ${status}`,
              type: status === 429 ? "rate_limit_exceeded" : "server_error",
              param: null,
              code: null,
            },
          },
        );
        res.writeHead(status, { "content-type": "application/json", ...headers }).end(text);
      });
      return true;
    };
    await options.handle({
      req,
      res,
      bytes: Buffer.concat(chunks),
      record,
      answer,
      refuse,
      nextFailure: () => failures.shift(),
      fail,
    });
  };

  let server: Server;
  const listen = (port: number) =>
    new Promise<number>((resolve, reject) => {
      server = createServer((req, res) => {
        serve(req, res).catch((err: unknown) => {
          if (!res.headersSent) openAiError(res, 500, String(err));
        });
      });
      server.once("error", reject);
      server.listen(port, "127.0.0.1", () => resolve((server.address() as AddressInfo).port));
    });
  const stop = () =>
    new Promise<void>((resolve) => {
      for (const res of hanging) res.destroy();
      hanging.clear();
      server.closeAllConnections();
      server.close(() => resolve());
    });
  const port = await listen(0);
  return {
    base: `http://127.0.0.1:${port}/v1`,
    key,
    requests,
    failNext: (failure, count = 1) => {
      for (let i = 0; i < count; i += 1) failures.push(failure);
    },
    down: stop,
    up: async () => void (await listen(port)),
    close: stop,
  };
}
