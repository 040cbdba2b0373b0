/**
 * Child process of test/telemetry/otel.test.ts: loads the whole bot (src/app.ts) and asks for
 * telemetry without OTEL_EXPORTER_OTLP_ENDPOINT, prints what it got as one JSON line, then (the
 * control) starts it with an endpoint and stops it again. The parent's module-resolution hook lists
 * which OpenTelemetry packages were loaded, and when.
 */
import { appendFileSync } from "node:fs";
import "../../src/app.js";
import { silentLogger } from "../../src/log.js";
import { bullmqTelemetry, startTelemetry, stopTelemetry, telemetryOn } from "../../src/telemetry/otel.js";
import { testConfig } from "../helpers/config.js";

const marks = process.env.OTEL_TEST_MARKS!;
const off = await startTelemetry(testConfig({}), silentLogger);
const result = { started: off, on: telemetryOn(), bullmq: Object.keys(bullmqTelemetry()) };
appendFileSync(marks, "--- with the endpoint\n");
const on = await startTelemetry(testConfig({ OTEL_EXPORTER_OTLP_ENDPOINT: "http://127.0.0.1:9" }), silentLogger);
await stopTelemetry();
console.log(JSON.stringify({ ...result, control: on }));
