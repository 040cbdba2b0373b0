/**
 * Ajv's errors as short lines a reader can act on, for the spec checks of the fake Telegram and
 * Discord (`telegram-spec.ts`, `discord-spec.ts`).
 *
 * A value checked against a union (`anyOf`/`oneOf`: Telegram's `reply_markup` or
 * `BotCommandScope`, Discord's interaction callback or component types) fails every
 * alternative, and Ajv reports them all. Here the union's value is checked against each
 * alternative on its own and only the closest one is reported: the one with the fewest problems
 * (then the one whose problems lie deepest), which is the one the sender meant. This needs
 * validators compiled with `verbose: true` (errors carry their schema and data) and schemas whose
 * `$ref`s are absolute (so an alternative compiles on its own).
 */
import type { Ajv, ErrorObject } from "ajv";

/** One problem: where (`reply_markup.inline_keyboard[0][0].callback_data`) and what. */
export interface SpecProblem {
  /** Path segments from the request's root (property names and array indices). */
  path: (string | number)[];
  /** Ajv's keyword (`maxLength`, `required`, `additionalProperties`, or one of ours). */
  keyword: string;
  message: string;
  /** Ajv's `params` of the error (e.g. `limit`; ours: `min`, `max`, `actual`). */
  params: Record<string, unknown>;
}

const UNIONS = new Set(["anyOf", "oneOf"]);
const SUMMARIES = new Set(["anyOf", "oneOf", "allOf", "if", "not", "then", "else"]);

/**
 * The problems behind `errors` (never empty when `errors` is not).
 * @param ajv - the instance that compiled the failing validator (alternatives are compiled there, once each).
 */
export function specProblems(ajv: Pick<Ajv, "compile">, errors: readonly ErrorObject[]): SpecProblem[] {
  const unions = errors
    .filter((e) => UNIONS.has(e.keyword))
    .sort((a, b) => depth(a.instancePath) - depth(b.instancePath));
  const handled: string[] = [];
  const problems: SpecProblem[] = [];
  for (const union of unions) {
    if (handled.some((p) => within(union.instancePath, p))) continue;
    handled.push(union.instancePath);
    problems.push(...closestAlternative(ajv, union));
  }
  for (const error of errors) {
    if (SUMMARIES.has(error.keyword) || handled.some((p) => within(error.instancePath, p))) continue;
    problems.push(toProblem(error));
  }
  const seen = new Set<string>();
  return problems.filter((p) => {
    const key = `${formatPath(p.path)}|${p.message}`;
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}

/** `a.b[0].c` for a problem's path (`(request)` for the request itself). */
export function formatPath(path: readonly (string | number)[]): string {
  let out = "";
  for (const segment of path)
    out += typeof segment === "number" ? `[${segment}]` : out === "" ? segment : `.${segment}`;
  return out === "" ? "(request)" : out;
}

/** One line: `path: message`. */
export function problemLine(problem: SpecProblem): string {
  return `${formatPath(problem.path)}: ${problem.message}`;
}

function closestAlternative(ajv: Pick<Ajv, "compile">, union: ErrorObject): SpecProblem[] {
  const base = pathOf(union.instancePath);
  const alternatives = Array.isArray(union.schema) ? (union.schema as object[]) : [];
  const failures: SpecProblem[][] = [];
  for (const alternative of alternatives) {
    const validate = ajv.compile(alternative);
    if (!validate(union.data)) failures.push(specProblems(ajv, validate.errors ?? []));
  }
  // No alternative fails on its own: a oneOf that several alternatives match.
  if (failures.length === 0 || failures.some((f) => f.length === 0)) return [toProblem(union)];
  // A union of constants (an enum written as oneOf): one problem naming them all.
  const constants = failures.map((f) =>
    f.length === 1 && f[0]!.path.length === 0 && f[0]!.keyword === "const" ? f[0]!.params.allowedValue : undefined,
  );
  if (constants.every((c) => c !== undefined)) {
    return [
      {
        path: base,
        keyword: "enum",
        message: `must be one of ${JSON.stringify(constants)}`,
        params: { allowedValues: constants },
      },
    ];
  }
  const best = failures.reduce((a, b) => (closer(b, a) ? b : a));
  return best.map((p) => ({ ...p, path: [...base, ...p.path] }));
}

/**
 * Whether alternative `a` is closer to what was sent than `b`: one that is plainly another kind of
 * value comes last — its type is not the value's (`must be null`, `must be string` for an object)
 * or a field it fixes differs (`type: must be equal to constant "default"` for a `chat` scope);
 * then fewer problems; then problems that lie deeper.
 */
function closer(a: SpecProblem[], b: SpecProblem[]): boolean {
  const wrongType = (found: SpecProblem[]) =>
    found.some((p) => (p.keyword === "type" && p.path.length === 0) || (p.keyword === "const" && p.path.length === 1));
  if (wrongType(a) !== wrongType(b)) return wrongType(b);
  if (a.length !== b.length) return a.length < b.length;
  return deepest(a) > deepest(b);
}

function deepest(problems: SpecProblem[]): number {
  return Math.max(0, ...problems.map((p) => p.path.length));
}

function depth(instancePath: string): number {
  return instancePath === "" ? 0 : instancePath.split("/").length - 1;
}

/** Whether `path` is `ancestor` or lies inside it (JSON pointers). */
function within(path: string, ancestor: string): boolean {
  return path === ancestor || path.startsWith(`${ancestor}/`);
}

function pathOf(instancePath: string): (string | number)[] {
  return instancePath
    .split("/")
    .slice(1)
    .map((s) => s.replace(/~1/g, "/").replace(/~0/g, "~"))
    .map((s) => (/^\d+$/.test(s) ? Number(s) : s));
}

function toProblem(error: ErrorObject): SpecProblem {
  const path = pathOf(error.instancePath);
  const params = error.params as Record<string, unknown>;
  if (error.keyword === "required")
    return {
      path: [...path, String(params.missingProperty)],
      keyword: "required",
      message: "required, but missing",
      params,
    };
  if (error.keyword === "additionalProperties") {
    return {
      path: [...path, String(params.additionalProperty)],
      keyword: "additionalProperties",
      message: "not a field the spec defines here",
      params,
    };
  }
  let message = error.message ?? error.keyword;
  if (error.keyword === "enum" || error.keyword === "const")
    message += ` (${JSON.stringify(params.allowedValues ?? params.allowedValue)})`;
  return { path, keyword: error.keyword, message, params };
}
