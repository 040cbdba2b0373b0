/**
 * The LINE webhook HTTP server: LINE posts `{ destination, events }` to the webhook URL set in the
 * LINE Developers console (https://developers.line.biz/en/reference/messaging-api/#webhooks).
 *
 * - Only `POST` on `LINE_WEBHOOK_PATH`, and (with Redis) `GET` of a voice reply's audio under
 *   `<dir of LINE_WEBHOOK_PATH>/voice/` (`voice.ts`); anything else is 404.
 * - `x-line-signature` must be there (401 before any byte of the body is read) and must be the
 *   base64 HMAC-SHA256 of the raw body with the channel secret, compared in constant time
 *   (`validateSignature` of `@line/bot-sdk`); otherwise 401, and the body is never parsed.
 *   Source: https://developers.line.biz/en/reference/messaging-api/#signature-validation
 * - The body is read up to {@link LINE_WEBHOOK_BODY_LIMIT_BYTES}; a larger one is 413 and is not
 *   read (a `Content-Length` over the limit is refused at once). A body that is not JSON is 400.
 * - A valid request is answered 200 at once and its events are handled afterwards (LINE wants a
 *   quick answer and does not wait for the bot's work).
 * - Header, request and keep-alive timeouts from `src/http-server.ts`.
 */
import { createServer, type Server } from "node:http";
import { validateSignature, type webhook } from "@line/bot-sdk";
import { BodyTooLargeError, listen, readBody, refuseAndClose, withTimeouts } from "../../src/http-server.js";
import type { Logger } from "../../src/log.js";
import type { RedisClient } from "../../src/redis.js";
import { serveVoice, voicePath } from "./voice.js";

/** Largest webhook body accepted, in bytes (1 MiB); LINE sends at most a few events per request. */
export const LINE_WEBHOOK_BODY_LIMIT_BYTES = 1024 * 1024;

const SIGNATURE_HEADER = "x-line-signature";

/** Options of {@link startLineWebhook}. */
export interface LineWebhookOptions {
  /** `LINE_WEBHOOK_PATH`. */
  path: string;
  /** `LINE_CHANNEL_SECRET`. */
  secret: string;
  /** `LINE_WEBHOOK_PORT`. */
  port: number;
  /** `HTTP_HOST`; undefined = every interface. */
  host: string | undefined;
  log: Logger;
  /** Where voice replies' audio is read from (`voice.ts`); without it none is served. */
  redis?: RedisClient;
  /** Handles the events of one verified request, after it was answered; must not throw. */
  onEvents(events: webhook.Event[]): void;
}

/**
 * Starts the webhook server; resolves once it listens.
 * @throws the listen error (port taken, host not an address of this machine).
 */
export async function startLineWebhook(options: LineWebhookOptions): Promise<Server> {
  const { log } = options;
  const server = withTimeouts(
    createServer((req, res) => {
      if (options.redis && serveVoice(req, res, voicePath(options.path), options.redis)) return;
      if (req.method !== "POST" || new URL(req.url ?? "/", "http://x").pathname !== options.path) {
        res.writeHead(404).end();
        return;
      }
      const signature = [req.headers[SIGNATURE_HEADER]].flat()[0];
      if (!signature) {
        log.warn("line: webhook request refused: no x-line-signature (401)");
        return refuseAndClose(req, res, 401);
      }
      readBody(req, LINE_WEBHOOK_BODY_LIMIT_BYTES).then(
        (body) => {
          if (!validateSignature(body, options.secret, signature)) {
            log.warn("line: webhook request refused: the signature does not match LINE_CHANNEL_SECRET (401)");
            return refuseAndClose(req, res, 401);
          }
          let events: webhook.Event[];
          try {
            const parsed = JSON.parse(body.toString("utf8")) as webhook.CallbackRequest;
            events = Array.isArray(parsed.events) ? parsed.events : [];
          } catch {
            log.warn("line: webhook request refused: the body is not JSON (400)");
            return refuseAndClose(req, res, 400);
          }
          res.writeHead(200, { "content-type": "application/json" }).end("{}");
          options.onEvents(events);
        },
        (error: unknown) => {
          if (error instanceof BodyTooLargeError) {
            log.warn({ limitBytes: error.limitBytes }, "line: webhook request refused: body too large (413)");
            return refuseAndClose(req, res, 413);
          }
          log.warn({ error: String(error) }, "line: webhook request could not be read");
          if (!res.headersSent) res.writeHead(400).end();
        },
      );
    }),
  );
  await listen(server, options.port, options.host);
  return server;
}
