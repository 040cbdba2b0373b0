/**
 * A real logger (`createLogger`, with its redaction) whose JSON lines are kept for assertions.
 */
import { Writable } from "node:stream";
import { createLogger, type Logger } from "../../src/log.js";

/** A logger at `level` (default `debug`) and the lines it wrote, as text. */
export function captureLogger(level = "debug"): { log: Logger; lines: string[] } {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk, _enc, done) {
      lines.push(String(chunk));
      done();
    },
  });
  return { log: createLogger({ level, pretty: false, destination }), lines };
}
