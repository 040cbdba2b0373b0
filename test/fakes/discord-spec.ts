/**
 * Checks a request to Discord's HTTP API against Discord's own OpenAPI 3.1 description
 * (`test/fixtures/specs/discord-api/openapi.json`, from https://github.com/discord/discord-api-spec;
 * provenance beside it), so the fake Discord (`discord.ts`) refuses what Discord's API does not
 * define:
 * - the route and method exist (`404: Not Found` / `405: Method Not Allowed`, code 0, as Discord
 *   answers); a literal segment wins over a parameter (`/users/@me` before `/users/{user_id}`);
 * - path parameters match their schemas (snowflakes: `^(0|[1-9][0-9]*)$`); every query
 *   parameter is one the operation declares, of its type;
 * - the JSON body (or a multipart body's `payload_json`) validates against the operation's
 *   `requestBody` schema with Ajv (JSON Schema 2020-12: `$ref`s, `oneOf`/`anyOf`, nullable types,
 *   enums, `maxLength` such as `content` ≤ 2000 or `custom_id` ≤ 100, `maxItems`). Discord
 *   ignores fields it does not know; the fake refuses them (each object schema that lists its
 *   `properties` gets `additionalProperties: false`), since a field Discord's spec does not
 *   define is either a typo or something the bot should not rely on.
 *
 * A refused request is answered like Discord answers an invalid body: 400
 * `{ code: 50035, message: "Invalid Form Body", errors: { <field>: { _errors: [{ code, message }] } } }`
 * (https://discord.com/developers/docs/reference#error-messages).
 *
 * Validators are compiled once per operation and kept across test processes (`spec-cache.ts`).
 */
import { readFileSync } from "node:fs";
import { _, Ajv2020, type ValidateFunction } from "ajv/dist/2020.js";
import addFormatsModule from "ajv-formats";
import { cachedValidator, specFingerprint } from "./spec-cache.js";
import { problemLine, specProblems, type SpecProblem } from "./spec-problems.js";

// ajv-formats is CommonJS: under NodeNext its default import is the module object.
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (
  ajv: Ajv2020,
) => Ajv2020;

/**
 * Where openapi.json and Discord's documentation disagree, the documentation wins (Discord's
 * README: "If you find discrepancies between the spec and our docs … follow the docs, not the
 * spec"). Each entry sets the value at a JSON pointer of openapi.json before anything is
 * compiled, and says why, with the documentation's URL.
 */
export const DISCORD_SPEC_EXCEPTIONS: readonly { at: string; value: unknown; reason: string; docs: string }[] = [
  {
    at: "/components/schemas/MessageCreateRequest/properties/content/maxLength",
    value: 2000,
    reason:
      "the spec allows 4000 characters (the limit of Nitro users' own messages); the docs give 2000 for a message's content, which is what a bot gets",
    docs: "https://discord.com/developers/docs/resources/message#create-message",
  },
  {
    at: "/components/schemas/MessageEditRequestPartial/properties/content/maxLength",
    value: 2000,
    reason: "as for creating a message: the docs give 2000 characters for an edited message's content, the spec 4000",
    docs: "https://discord.com/developers/docs/resources/message#edit-message",
  },
];

/** One REST request, as the fake received it. */
export interface DiscordRequest {
  /** HTTP method, upper case. */
  method: string;
  /** The URL's path, e.g. `/api/v10/channels/81…/messages`. */
  path: string;
  query: URLSearchParams;
  /** The parsed JSON body (a multipart body's `payload_json`), or `undefined` for none. */
  body: unknown;
  /** Names of a multipart body's file parts (`files[0]` …). */
  files?: string[];
}

/** The outcome of {@link checkDiscordRequest}. */
export type DiscordCheck =
  | { ok: true; route: string }
  | {
      ok: false;
      /** `POST /channels/{channel_id}/messages`, or the request's own method and path when no route matched. */
      route: string;
      /** The status and JSON body Discord answers. */
      status: number;
      body: Record<string, unknown>;
      /** Every problem found, one line each. */
      problems: string[];
    };

interface Parameter {
  name: string;
  in: "path" | "query" | "header";
  required?: boolean;
  schema: Record<string, unknown>;
}

interface Operation {
  parameters?: Parameter[];
  requestBody?: { required?: boolean; content: Record<string, { schema: Record<string, unknown> }> };
}

interface Route {
  template: string;
  /** Literal segments as strings; parameters as `{ name }`. */
  segments: (string | { name: string })[];
  item: Record<string, unknown> & { parameters?: Parameter[] };
}

const API_PREFIX = "/api/v10";

const SPEC_FILE = new URL("../fixtures/specs/discord-api/openapi.json", import.meta.url);

/**
 * Ajv options of every validator here. `verbose`: errors carry their schema and data, so
 * spec-problems.ts can single out a union's closest alternative. Compiling is what costs (measured
 * on this 2-core machine: 0.6-1.1 s for `POST /channels/{channel_id}/messages` with Ajv's defaults,
 * 0.2-0.5 s without inlining `$ref`s and without the code optimiser), so neither is used, and
 * compiled validators are cached across processes (`code.source`, `code.formats`: what
 * standalone code needs). `validateSchema: false` skips checking the 1.2 MB document against the
 * meta-schema: it is Discord's, and what the fake uses of it compiles in the tests.
 */
const COMPILE_OPTIONS = {
  allErrors: true,
  verbose: true,
  inlineRefs: false,
  validateSchema: false,
  code: {
    optimize: false,
    source: true,
    formats: _`Object.assign({}, require("ajv-formats/dist/formats").fullFormats, { snowflake: /^(0|[1-9][0-9]*)$/, nonce: true })`,
  },
} as const;
const METHODS = ["get", "put", "post", "delete", "patch", "head", "options"];

let routes: Route[] | undefined;
let fingerprint: string | undefined;
let ajv: Ajv2020 | undefined;
/** Coerces strings (path and query values) to the parameter's type. */
let paramAjv: Ajv2020 | undefined;
const bodyValidators = new Map<string, ValidateFunction>();
const paramValidators = new Map<object, ValidateFunction>();

/**
 * Checks one request.
 * @returns `{ ok: true, route }`, or the answer Discord gives and every problem found.
 */
export function checkDiscordRequest(request: DiscordRequest): DiscordCheck {
  const own = `${request.method} ${request.path}`;
  if (!request.path.startsWith(`${API_PREFIX}/`))
    return refused(own, 404, { message: "404: Not Found", code: 0 }, [`${request.path}: not under ${API_PREFIX}`]);
  const segments = request.path
    .slice(API_PREFIX.length + 1)
    .split("/")
    .map(decodeURIComponent);
  const matching = loadRoutes().filter((r) => matches(r, segments));
  if (matching.length === 0)
    return refused(own, 404, { message: "404: Not Found", code: 0 }, [`${own}: no such route in Discord's API`]);
  const method = request.method.toLowerCase();
  const route = matching.find((r) => METHODS.includes(method) && r.item[method]);
  if (!route)
    return refused(own, 405, { message: "405: Method Not Allowed", code: 0 }, [
      `${own}: ${matching[0]!.template} has no ${request.method}`,
    ]);
  const name = `${request.method} ${route.template}`;
  const operation = route.item[method] as Operation;
  const parameters = [...(route.item.parameters ?? []), ...(operation.parameters ?? [])];
  const problems: SpecProblem[] = [];

  route.segments.forEach((segment, i) => {
    if (typeof segment === "string") return;
    const parameter = parameters.find((p) => p.in === "path" && p.name === segment.name);
    if (parameter) problems.push(...checkParameter(parameter, segments[i]!));
  });
  const query = parameters.filter((p) => p.in === "query");
  for (const [key, value] of request.query) {
    const parameter = query.find((p) => p.name === key);
    if (!parameter)
      problems.push({ path: [key], keyword: "query", message: "not a query parameter of this route", params: {} });
    else problems.push(...checkParameter(parameter, value));
  }
  for (const p of query)
    if (p.required && !request.query.has(p.name))
      problems.push({
        path: [p.name],
        keyword: "required",
        message: "required query parameter, but missing",
        params: {},
      });

  problems.push(...checkBody(name, operation, request));
  if (problems.length === 0) return { ok: true, route: name };
  return refused(
    name,
    400,
    { code: 50035, message: "Invalid Form Body", errors: formErrors(problems) },
    problems.map(problemLine),
  );
}

function refused(route: string, status: number, body: Record<string, unknown>, problems: string[]): DiscordCheck {
  return { ok: false, route, status, body, problems };
}

function checkBody(name: string, operation: Operation, request: DiscordRequest): SpecProblem[] {
  const content = operation.requestBody?.content;
  if (request.body === undefined) {
    return operation.requestBody?.required
      ? [{ path: [], keyword: "required", message: "this route needs a JSON body", params: {} }]
      : [];
  }
  const json = content?.["application/json"];
  if (!json) return [{ path: [], keyword: "requestBody", message: "this route takes no JSON body", params: {} }];
  const problems: SpecProblem[] = [];
  for (const file of request.files ?? []) {
    if (!/^files\[\d+\]$/.test(file))
      problems.push({ path: [file], keyword: "multipart", message: "a file part must be named files[n]", params: {} });
  }
  let validate = bodyValidators.get(name);
  if (!validate) {
    fingerprint ??= specFingerprint([SPEC_FILE, new URL(import.meta.url)]);
    validate = cachedValidator(fingerprint, `discord-${name}`, () => ({
      ajv: bodyAjv(),
      validate: bodyAjv().compile(json.schema),
    }));
    bodyValidators.set(name, validate);
  }
  if (!validate(request.body)) problems.push(...specProblems(bodyAjv(), validate.errors ?? []));
  return problems;
}

/** A path or query value against its parameter's schema (the text coerced to the schema's type). */
function checkParameter(parameter: Parameter, value: string): SpecProblem[] {
  let validate = paramValidators.get(parameter);
  if (!validate) {
    paramAjv ??= withDiscordFormats(new Ajv2020({ ...COMPILE_OPTIONS, strict: false, coerceTypes: true }));
    if (!paramAjv.getSchema("discord-api")) paramAjv.addSchema(loadSpecDocument(), "discord-api");
    validate = paramAjv.compile({ type: "object", properties: { value: parameter.schema } });
    paramValidators.set(parameter, validate);
  }
  const holder = { value };
  if (validate(holder)) return [];
  return (validate.errors ?? []).map((e) => ({
    path: [parameter.name],
    keyword: e.keyword,
    message: `${JSON.stringify(value)} ${e.message ?? "is invalid"}`,
    params: e.params as Record<string, unknown>,
  }));
}

/** Discord's nested `errors` object: `{ data: { content: { _errors: [{ code, message }] } } }`. */
function formErrors(problems: SpecProblem[]): Record<string, unknown> {
  const errors: Record<string, unknown> = {};
  for (const problem of problems) {
    let node = errors;
    for (const segment of problem.path) node = (node[String(segment)] ??= {}) as Record<string, unknown>;
    ((node._errors ??= []) as unknown[]).push({ code: errorCode(problem), message: problem.message });
  }
  return errors;
}

/** Discord's error codes for a JSON field (https://discord.com/developers/docs/reference#error-messages). */
function errorCode(problem: SpecProblem): string {
  switch (problem.keyword) {
    case "maxLength":
    case "maxItems":
      return "BASE_TYPE_MAX_LENGTH";
    case "minLength":
    case "minItems":
      return "BASE_TYPE_MIN_LENGTH";
    case "required":
      return "BASE_TYPE_REQUIRED";
    case "enum":
    case "const":
      return "BASE_TYPE_CHOICES";
    default:
      return `SPEC_${problem.keyword.toUpperCase()}`;
  }
}

function matches(route: Route, segments: string[]): boolean {
  return (
    route.segments.length === segments.length &&
    route.segments.every((s, i) => (typeof s === "string" ? s === segments[i] : segments[i] !== ""))
  );
}

let specDocument: Record<string, unknown> | undefined;

/** openapi.json with {@link DISCORD_SPEC_EXCEPTIONS} applied, `$ref`s made absolute and unknown fields refused; read once. */
function loadSpecDocument(): Record<string, unknown> {
  if (specDocument) return specDocument;
  const document = JSON.parse(readFileSync(SPEC_FILE, "utf8")) as Record<string, unknown>;
  for (const exception of DISCORD_SPEC_EXCEPTIONS) setAt(document, exception.at, exception.value);
  closeObjects(document.components);
  closeObjects(document.paths);
  return (specDocument = document);
}

function loadRoutes(): Route[] {
  if (routes) return routes;
  const paths = loadSpecDocument().paths as Record<string, Route["item"]>;
  routes = Object.entries(paths).map(([template, item]) => ({
    template,
    item,
    segments: template
      .slice(1)
      .split("/")
      .map((s) => (/^\{.+\}$/.test(s) ? { name: s.slice(1, -1) } : s)),
  }));
  // The most specific first: at the first segment where two routes differ, a literal before a parameter.
  routes.sort((a, b) => {
    for (let i = 0; i < Math.min(a.segments.length, b.segments.length); i++) {
      const [x, y] = [typeof a.segments[i] === "string", typeof b.segments[i] === "string"];
      if (x !== y) return x ? -1 : 1;
    }
    return 0;
  });
  return routes;
}

function bodyAjv(): Ajv2020 {
  if (ajv) return ajv;
  ajv = withDiscordFormats(new Ajv2020({ ...COMPILE_OPTIONS, strict: false }));
  ajv.addSchema(loadSpecDocument(), "discord-api");
  return ajv;
}

/** ajv-formats' formats (`uri`, `date-time`, `int32`, `int64`, `double`) and openapi.json's own two (the same in COMPILE_OPTIONS.code.formats). */
function withDiscordFormats(instance: Ajv2020): Ajv2020 {
  addFormats(instance);
  instance.addFormat("snowflake", /^(0|[1-9][0-9]*)$/);
  instance.addFormat("nonce", true);
  return instance;
}

/**
 * Makes every `$ref` absolute (`discord-api#/components/…`, so one alternative of a union
 * compiles on its own) and refuses unknown fields: an object schema with `properties` and no
 * `additionalProperties` gets `additionalProperties: false`.
 */
function closeObjects(node: unknown): void {
  if (Array.isArray(node)) return node.forEach(closeObjects);
  if (typeof node !== "object" || node === null) return;
  const schema = node as Record<string, unknown>;
  if (typeof schema.$ref === "string" && schema.$ref.startsWith("#/")) schema.$ref = `discord-api${schema.$ref}`;
  if (schema.properties && typeof schema.properties === "object" && schema.additionalProperties === undefined)
    schema.additionalProperties = false;
  for (const value of Object.values(schema)) closeObjects(value);
}

function setAt(document: Record<string, unknown>, pointer: string, value: unknown): void {
  const keys = pointer.split("/").slice(1);
  let node = document;
  for (const key of keys.slice(0, -1)) {
    if (typeof node[key] !== "object" || node[key] === null)
      throw new Error(`DISCORD_SPEC_EXCEPTIONS: ${pointer} is not in openapi.json`);
    node = node[key] as Record<string, unknown>;
  }
  const last = keys.at(-1)!;
  if (!(last in node)) throw new Error(`DISCORD_SPEC_EXCEPTIONS: ${pointer} is not in openapi.json`);
  node[last] = value;
}
