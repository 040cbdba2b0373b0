/**
 * A vitest reporter that prints, after the usual summary, the slowest test files of the run and
 * the sum of all files' durations, so `npm test` shows where the time goes (issue 24: the suite
 * gets faster, not slower). Used beside the default reporter in `vitest.config.ts`.
 *
 * A file's duration is what vitest measured for it in its worker: preparing the runner, importing
 * the file with everything it imports (the transform included), the setup files, and every test
 * and hook (`TestModule.diagnostic()`, https://vitest.dev/advanced/api/test-module#diagnostic).
 * A file run in two projects (`redis` and `cluster`) counts twice, once per project.
 */
import type { Reporter, TestModule } from "vitest/node";

/** How many of the slowest files are listed. */
export const SLOWEST_SHOWN = 30;

/** One file run: its project, its path relative to the root, and its durations in ms. */
export interface FileDuration {
  project: string;
  file: string;
  /** Import and set-up (runner, the file's imports, setup files), ms. */
  importMs: number;
  /** Tests and hooks, ms. */
  testsMs: number;
  /** `importMs + testsMs`. */
  totalMs: number;
}

/** The durations of each file run of `modules` (unfinished or unrun ones count 0), slowest first. */
export function fileDurations(modules: ReadonlyArray<TestModule>): FileDuration[] {
  return modules
    .map((module) => {
      const d = module.diagnostic();
      const importMs = d.environmentSetupDuration + d.prepareDuration + d.collectDuration + d.setupDuration;
      return {
        project: module.project.name || "(root)",
        file: module.relativeModuleId,
        importMs,
        testsMs: d.duration,
        totalMs: importMs + d.duration,
      };
    })
    .sort((a, b) => b.totalMs - a.totalMs);
}

const seconds = (ms: number) => (ms / 1000).toFixed(1);

/**
 * The report's lines: a header, the {@link SLOWEST_SHOWN} slowest file runs (seconds, project,
 * file, and how much of it was import), and the sum over all runs with each project's share, and
 * with `wallMs` (the run's wall time from its start to its end, ms) that time too.
 */
export function durationLines(rows: FileDuration[], wallMs?: number): string[] {
  if (rows.length === 0) return [];
  const width = Math.max(...rows.map((r) => r.project.length));
  const lines = [
    `The ${Math.min(SLOWEST_SHOWN, rows.length)} slowest of ${rows.length} test file runs (seconds; import = runner set-up and the file's imports):`,
  ];
  for (const r of rows.slice(0, SLOWEST_SHOWN)) {
    lines.push(
      `  ${seconds(r.totalMs).padStart(6)}  ${r.project.padEnd(width)}  ${r.file}  (import ${seconds(r.importMs)})`,
    );
  }
  const byProject = new Map<string, { ms: number; n: number }>();
  for (const r of rows) {
    const p = byProject.get(r.project) ?? { ms: 0, n: 0 };
    byProject.set(r.project, { ms: p.ms + r.totalMs, n: p.n + 1 });
  }
  const total = rows.reduce((sum, r) => sum + r.totalMs, 0);
  const shares = [...byProject].map(([name, p]) => `${name} ${seconds(p.ms)} s in ${p.n}`).join(", ");
  const wall =
    wallMs === undefined
      ? ""
      : `; ${seconds(wallMs)} s of wall time, about ${(total / wallMs).toFixed(1)} files at once`;
  lines.push(`Durations summed over ${rows.length} file runs: ${seconds(total)} s (${shares})${wall}`);
  return lines;
}

/** The reporter: prints {@link durationLines} once the run has ended. */
export default class DurationsReporter implements Reporter {
  #startedAt: number | undefined;

  onTestRunStart(): void {
    this.#startedAt = performance.now();
  }

  onTestRunEnd(modules: ReadonlyArray<TestModule>): void {
    const wallMs = this.#startedAt === undefined ? undefined : performance.now() - this.#startedAt;
    const lines = durationLines(fileDurations(modules), wallMs);
    if (lines.length > 0) process.stdout.write(`\n${lines.join("\n")}\n`);
  }
}
