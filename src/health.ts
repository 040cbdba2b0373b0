/**
 * The health endpoint, and the metrics beside it: `GET /metrics` serves the Prometheus text of
 * `src/metrics.ts`; `GET /health` answers 200 when every check passes and 503 otherwise, with
 * a JSON body naming each check (`{"status":"ok","checks":{"redis":true,"telegram":true}}`).
 * Off unless `HTTP_PORT` (or its old name `HEALTH_PORT`) is set; the Docker image's HEALTHCHECK calls it. The checks are Redis
 * and each running adapter's `isConnected()` (Telegram: polling alive and not failing for over
 * 60 s, or the webhook set; Discord: gateway ready and not reconnecting for over 60 s); the README's
 * "What /health means" is the operator's description.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { listen, withTimeouts } from "./http-server.js";
import type { Logger } from "./log.js";
import { renderMetrics } from "./metrics.js";

/** A named check: resolves true when healthy. A check that throws or takes over 2 s counts as unhealthy. */
export type HealthCheck = () => boolean | Promise<boolean>;

const CHECK_TIMEOUT_MS = 2000;

async function runCheck(check: HealthCheck): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      Promise.resolve().then(check),
      new Promise<boolean>((resolve) => (timer = setTimeout(() => resolve(false), CHECK_TIMEOUT_MS))),
    ]);
  } catch {
    return false;
  } finally {
    clearTimeout(timer);
  }
}

/** Runs every check; `ok` is true only when all pass. */
export async function checkHealth(
  checks: Record<string, HealthCheck>,
): Promise<{ ok: boolean; checks: Record<string, boolean> }> {
  const entries = await Promise.all(
    Object.entries(checks).map(async ([name, check]) => [name, await runCheck(check)] as const),
  );
  return { ok: entries.every(([, ok]) => ok), checks: Object.fromEntries(entries) };
}

/** Where the health server listens when `HTTP_HOST` is unset: this machine only (`/metrics` has no authentication). */
export const HEALTH_DEFAULT_HOST = "127.0.0.1";

/**
 * Starts the health server on `port` of `host` (`HTTP_HOST`; undefined = {@link HEALTH_DEFAULT_HOST},
 * which the Docker image's HEALTHCHECK calls; `docker-compose.yml` sets `0.0.0.0` so a Prometheus
 * in the compose network can scrape), with the timeouts of `src/http-server.ts`. Resolves once listening.
 * `admin`, when given, answers every request to `/admin` and under it (the console, `ADMIN_CONSOLE=on`).
 * @throws when the port cannot be bound.
 */
export async function startHealthServer(
  port: number,
  checks: Record<string, HealthCheck>,
  log?: Logger,
  host: string = HEALTH_DEFAULT_HOST,
  admin?: { handle(req: IncomingMessage, res: ServerResponse): void },
): Promise<Server> {
  const server = withTimeouts(
    createServer((req, res) => {
      const path = (req.url ?? "").split("?")[0]!;
      if (admin && (path === "/admin" || path.startsWith("/admin/"))) return admin.handle(req, res);
      if (req.method === "GET" && path === "/metrics") {
        void renderMetrics().then(
          ({ contentType, body }) => res.writeHead(200, { "content-type": contentType }).end(body),
          () => res.writeHead(500, { "content-type": "text/plain" }).end("metrics could not be collected\n"),
        );
        return;
      }
      if (req.method !== "GET" || path !== "/health") {
        res.writeHead(404, { "content-type": "application/json" }).end('{"error":"not found"}');
        return;
      }
      void checkHealth(checks).then((result) => {
        res.writeHead(result.ok ? 200 : 503, { "content-type": "application/json" });
        res.end(JSON.stringify({ status: result.ok ? "ok" : "unavailable", checks: result.checks }));
      });
    }),
  );
  await listen(server, port, host);
  log?.info({ port, host }, `health endpoint on ${host}:${port}/health`);
  return server;
}
