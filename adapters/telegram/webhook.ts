/**
 * The webhook HTTP server of the Telegram adapter: grammy's `webhookCallback` behind a node:http
 * server that only a caller with the secret can feed, with a bounded body and bounded timeouts.
 *
 * - Only `POST` on the path of `TELEGRAM_WEBHOOK_URL`; anything else is 404.
 * - `X-Telegram-Bot-Api-Secret-Token` must equal `TELEGRAM_WEBHOOK_SECRET` (Bot API `setWebhook`
 *   `secret_token`, https://core.telegram.org/bots/api#setwebhook); otherwise 401, checked by
 *   grammy before any byte of the body is read.
 * - The body is read up to {@link WEBHOOK_BODY_LIMIT_BYTES}; a larger one is 413 and is not read
 *   (a `Content-Length` over the limit is refused at once). A body that is not JSON is 400.
 * - Header, request and keep-alive timeouts from `src/http-server.ts`.
 */
import { createServer, type IncomingMessage, type ServerResponse, type Server } from "node:http";
import { webhookCallback, type Bot } from "grammy";
import type { Update } from "grammy/types";
import { BodyTooLargeError, listen, readBody, refuseAndClose, withTimeouts } from "../../src/http-server.js";
import { redact, type Logger } from "../../src/log.js";

/**
 * Largest webhook body accepted, in bytes (1 MiB). A Telegram update with the longest text
 * (4096 characters) and its entities is a few tens of kilobytes.
 */
export const WEBHOOK_BODY_LIMIT_BYTES = 1024 * 1024;

/** Longest time the handlers may take for one update before Telegram is answered 200 anyway, in ms. */
const HANDLER_TIMEOUT_MS = 9000;

/** The secret header Telegram sends with every webhook request. */
const SECRET_HEADER = "x-telegram-bot-api-secret-token";

/** Options of {@link startWebhookServer}. */
export interface WebhookServerOptions {
  /** The path of `TELEGRAM_WEBHOOK_URL`, e.g. `/telegram/hook`. */
  path: string;
  /** `TELEGRAM_WEBHOOK_SECRET`. */
  secret: string;
  /** `TELEGRAM_WEBHOOK_PORT`. */
  port: number;
  /** `HTTP_HOST`; undefined = every interface. */
  host: string | undefined;
  log: Logger;
}

/**
 * Starts the webhook server; resolves once it listens.
 * @throws the listen error (port taken, host not an address of this machine).
 */
export async function startWebhookServer(bot: Bot, options: WebhookServerOptions): Promise<Server> {
  const { log } = options;
  const handle = webhookCallback(
    bot,
    (req: IncomingMessage, res: ServerResponse) => ({
      get update(): Promise<Update> {
        return readBody(req, WEBHOOK_BODY_LIMIT_BYTES).then((body) => JSON.parse(body.toString("utf8")) as Update);
      },
      header: [req.headers[SECRET_HEADER]].flat()[0],
      end: () => void res.end(),
      respond: (json: string) => void res.writeHead(200, { "content-type": "application/json" }).end(json),
      unauthorized: () => refuseAndClose(req, res, 401),
    }),
    { secretToken: options.secret, onTimeout: "return", timeoutMilliseconds: HANDLER_TIMEOUT_MS },
  );
  const server = withTimeouts(
    createServer((req, res) => {
      if (req.method !== "POST" || new URL(req.url ?? "/", "http://x").pathname !== options.path) {
        res.writeHead(404).end();
        return;
      }
      (handle(req, res) as Promise<void>).catch((error: unknown) => {
        if (error instanceof BodyTooLargeError) {
          log.warn(
            { limitBytes: error.limitBytes, contentLength: req.headers["content-length"] },
            "telegram: webhook request refused: body too large (413)",
          );
          return refuseAndClose(req, res, 413);
        }
        if (error instanceof SyntaxError) {
          log.warn("telegram: webhook request refused: the body is not JSON (400)");
          return refuseAndClose(req, res, 400);
        }
        log.error({ error: redact(String(error)) }, "telegram: webhook request failed");
        if (!res.headersSent) res.writeHead(500).end();
      });
    }),
  );
  await listen(server, options.port, options.host);
  return server;
}
