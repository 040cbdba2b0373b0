/**
 * A small OpenTelemetry collector for tests: an HTTP server taking OTLP/HTTP trace exports in the
 * JSON encoding (`POST /v1/traces`, `Content-Type: application/json`), as
 * `@opentelemetry/exporter-trace-otlp-http` sends them, and keeping the spans decoded.
 * Strict like the other fakes: another path, method or content type, or a body that is not an
 * `ExportTraceServiceRequest` (`resourceSpans` → `scopeSpans` → `spans` with hex ids), is refused
 * (404, 405, 415, 400) and counted in `rejections`.
 * Source: https://opentelemetry.io/docs/specs/otlp/#otlphttp (JSON: hex trace and span ids,
 * 64-bit integers as strings or numbers).
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";

/** A decoded attribute value. */
export type OtlpValue = string | number | boolean | OtlpValue[] | undefined;

/** One span as received, attributes decoded to plain values. */
export interface ReceivedSpan {
  traceId: string;
  spanId: string;
  /** "" for a root span. */
  parentSpanId: string;
  name: string;
  /** OTLP `SpanKind`: 1 internal, 2 server, 3 client, 4 producer, 5 consumer. */
  kind: number;
  /** ms since the Unix epoch. */
  startMs: number;
  endMs: number;
  attributes: Record<string, OtlpValue>;
  events: { name: string; attributes: Record<string, OtlpValue> }[];
  links: { traceId: string; spanId: string }[];
  status: { code?: number; message?: string };
  /** `service.name` of the export's resource. */
  service: string;
  /** Instrumentation scope name. */
  scope: string;
}

/** A running fake collector. */
export interface FakeCollector {
  /** Base URL for `OTEL_EXPORTER_OTLP_ENDPOINT` (`http://127.0.0.1:port`). */
  url: string;
  spans: ReceivedSpan[];
  /** Export requests received (accepted ones). */
  exports: number;
  /** Why refused requests were refused. */
  rejections: string[];
  close(): Promise<void>;
}

interface KeyValue {
  key: string;
  value?: Record<string, unknown>;
}

function decodeValue(value: Record<string, unknown> | undefined): OtlpValue {
  if (!value) return undefined;
  if ("stringValue" in value) return String(value.stringValue);
  if ("boolValue" in value) return Boolean(value.boolValue);
  if ("intValue" in value) return Number(value.intValue);
  if ("doubleValue" in value) return Number(value.doubleValue);
  if ("arrayValue" in value) {
    const values = ((value.arrayValue as { values?: Record<string, unknown>[] }).values ?? []).map(decodeValue);
    return values;
  }
  return undefined;
}

function decodeAttributes(list: unknown): Record<string, OtlpValue> {
  const out: Record<string, OtlpValue> = {};
  if (!Array.isArray(list)) return out;
  for (const kv of list as KeyValue[]) out[kv.key] = decodeValue(kv.value);
  return out;
}

const HEX16 = /^[0-9a-f]{16}$/;
const HEX32 = /^[0-9a-f]{32}$/;
const nanosToMs = (v: unknown) => Math.round(Number(v) / 1e6);

function decode(body: unknown): ReceivedSpan[] {
  const request = body as { resourceSpans?: unknown };
  if (!Array.isArray(request.resourceSpans)) throw new Error("no resourceSpans array");
  const spans: ReceivedSpan[] = [];
  for (const rs of request.resourceSpans as Record<string, unknown>[]) {
    const resource = decodeAttributes((rs.resource as { attributes?: unknown } | undefined)?.attributes);
    if (!Array.isArray(rs.scopeSpans)) throw new Error("no scopeSpans array");
    for (const ss of rs.scopeSpans as Record<string, unknown>[]) {
      const scope = String((ss.scope as { name?: unknown } | undefined)?.name ?? "");
      if (!Array.isArray(ss.spans)) throw new Error("no spans array");
      for (const s of ss.spans as Record<string, unknown>[]) {
        const traceId = String(s.traceId);
        const spanId = String(s.spanId);
        const parentSpanId = String(s.parentSpanId ?? "");
        if (!HEX32.test(traceId) || !HEX16.test(spanId) || (parentSpanId !== "" && !HEX16.test(parentSpanId)))
          throw new Error(`span ${String(s.name)}: ids are not hex (traceId ${traceId}, spanId ${spanId})`);
        if (typeof s.name !== "string" || s.name === "") throw new Error("a span without a name");
        spans.push({
          traceId,
          spanId,
          parentSpanId,
          name: s.name,
          kind: Number(s.kind ?? 0),
          startMs: nanosToMs(s.startTimeUnixNano),
          endMs: nanosToMs(s.endTimeUnixNano),
          attributes: decodeAttributes(s.attributes),
          events: ((s.events as Record<string, unknown>[] | undefined) ?? []).map((e) => ({
            name: String(e.name),
            attributes: decodeAttributes(e.attributes),
          })),
          links: ((s.links as Record<string, unknown>[] | undefined) ?? []).map((l) => ({
            traceId: String(l.traceId),
            spanId: String(l.spanId),
          })),
          status: (s.status as ReceivedSpan["status"] | undefined) ?? {},
          service: String(resource["service.name"] ?? ""),
          scope,
        });
      }
    }
  }
  return spans;
}

/** Starts a fake collector on 127.0.0.1 (a free port). */
export async function startFakeCollector(): Promise<FakeCollector> {
  const collector: FakeCollector = {
    url: "",
    spans: [],
    exports: 0,
    rejections: [],
    close: async () => {},
  };
  const server: Server = createServer((req, res) => {
    const refuse = (status: number, why: string) => {
      collector.rejections.push(why);
      res.writeHead(status, { "content-type": "text/plain" }).end(why);
    };
    if (req.url !== "/v1/traces") return refuse(404, `path ${req.url}`);
    if (req.method !== "POST") return refuse(405, `method ${req.method}`);
    if (!(req.headers["content-type"] ?? "").startsWith("application/json"))
      return refuse(415, `content-type ${req.headers["content-type"]}`);
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      try {
        collector.spans.push(...decode(JSON.parse(Buffer.concat(chunks).toString("utf8"))));
        collector.exports += 1;
        res.writeHead(200, { "content-type": "application/json" }).end("{}");
      } catch (error) {
        refuse(400, (error as Error).message);
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  collector.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  collector.close = () => new Promise((resolve) => server.close(() => resolve()));
  return collector;
}
