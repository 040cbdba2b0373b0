/**
 * Checks a request to LINE's Messaging API against LINE's own OpenAPI description
 * (`test/fixtures/specs/line-messaging-api/messaging-api.yml`, from https://github.com/line/line-openapi;
 * provenance beside it), so the fake LINE platform (`line.ts`) refuses what LINE does not define:
 * - the path and method exist, on the right host: the message contents
 *   (`/v2/bot/message/{messageId}/content`) are served by the data host (`api-data.line.me`), the
 *   rest by `api.line.me` (the operations' `servers`); else 404 `{"message":"Not found"}`;
 * - every query parameter is one the operation declares;
 * - the JSON body validates against the operation's `requestBody` schema (Ajv, `$ref`s, enums,
 *   `maxItems` such as 5 messages per reply or push, `maxLength` such as 300 characters of
 *   postback `data`). LINE's polymorphic objects (a message's `type`, a template's, an action's)
 *   are `discriminator`s over `allOf`: each is checked against the schema its `type` names, and
 *   fields that schema does not define are refused (`unevaluatedProperties: false`), as LINE
 *   answers 400 for unknown properties.
 *
 * A refused request is answered as LINE answers an invalid body: 400
 * `{ message: "The request body has 1 error(s)", details: [{ message, property }] }`
 * (https://developers.line.biz/en/reference/messaging-api/#error-responses).
 *
 * The fake's own webhook bodies are checked against `webhook.yml` ({@link checkLineWebhookBody}).
 *
 * Validators are compiled once per operation and kept across test processes (`spec-cache.ts`).
 */
import { readFileSync } from "node:fs";
import { _, Ajv2020, type ValidateFunction } from "ajv/dist/2020.js";
import addFormatsModule from "ajv-formats";
import { parse } from "yaml";
import { cachedValidator, specFingerprint } from "./spec-cache.js";
import { formatPath, problemLine, specProblems, type SpecProblem } from "./spec-problems.js";

// ajv-formats is CommonJS: under NodeNext its default import is the module object.
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (
  ajv: Ajv2020,
) => Ajv2020;

/**
 * Where messaging-api.yml and LINE Developers' documentation disagree (or the file leaves out a
 * documented limit), the documentation wins (the provenance note says so). Each entry sets the
 * value at a JSON pointer of the YAML document before anything is compiled, and says why.
 */
export const LINE_SPEC_EXCEPTIONS: readonly { at: string; value: unknown; reason: string; docs: string }[] = [
  {
    at: "/components/schemas/TextMessage/allOf/1/properties/text/maxLength",
    value: 5000,
    reason: "the file gives no limit; the docs: text message `text`, max character limit 5000",
    docs: "https://developers.line.biz/en/reference/messaging-api/#text-message",
  },
  {
    at: "/components/schemas/TextMessage/allOf/1/properties/text/minLength",
    value: 1,
    reason: "an empty text message is refused (the docs list `text` as required text)",
    docs: "https://developers.line.biz/en/reference/messaging-api/#text-message",
  },
  {
    at: "/components/schemas/TemplateMessage/allOf/1/properties/altText/maxLength",
    value: 400,
    reason: "the docs: template message `altText`, max character limit 400",
    docs: "https://developers.line.biz/en/reference/messaging-api/#template-messages",
  },
  {
    at: "/components/schemas/ButtonsTemplate/allOf/1/properties/text/maxLength",
    value: 160,
    reason: "the docs: buttons template `text`, max 160 characters without an image or title (60 with one)",
    docs: "https://developers.line.biz/en/reference/messaging-api/#buttons",
  },
  {
    at: "/components/schemas/ButtonsTemplate/allOf/1/properties/actions/maxItems",
    value: 4,
    reason: "the docs: buttons template `actions`, max 4",
    docs: "https://developers.line.biz/en/reference/messaging-api/#buttons",
  },
  {
    at: "/components/schemas/Action/properties/label/maxLength",
    value: 20,
    reason: "the docs: an action's `label`, max 20 characters (quick reply buttons and templates)",
    docs: "https://developers.line.biz/en/reference/messaging-api/#postback-action",
  },
  {
    at: "/components/schemas/RichMenuRequest/required",
    value: ["size", "selected", "name", "chatBarText", "areas"],
    reason: "the docs list every field of a rich menu object as required",
    docs: "https://developers.line.biz/en/reference/messaging-api/#rich-menu-object",
  },
  {
    at: "/components/schemas/RichMenuRequest/properties/areas/maxItems",
    value: 20,
    reason: "the docs: rich menu `areas`, max 20 area objects",
    docs: "https://developers.line.biz/en/reference/messaging-api/#rich-menu-object",
  },
  {
    at: "/components/schemas/PostbackAction/allOf/1/properties/displayText/maxLength",
    value: 300,
    reason: "the docs: postback action `displayText`, max 300 characters",
    docs: "https://developers.line.biz/en/reference/messaging-api/#postback-action",
  },
];

/** One REST request, as the fake received it. */
export interface LineRequest {
  /** Which server received it: `api` (`LINE_API_URL`) or `data` (`LINE_DATA_API_URL`). */
  host: "api" | "data";
  /** HTTP method, upper case. */
  method: string;
  /** The URL's path, e.g. `/v2/bot/message/reply`. */
  path: string;
  query: URLSearchParams;
  /** The parsed JSON body, or `undefined` for none (or a binary one). */
  body: unknown;
  /** True when the body is binary (not JSON), e.g. a rich menu picture. */
  binary?: boolean;
}

/** The outcome of {@link checkLineRequest}. */
export type LineCheck =
  | { ok: true; route: string }
  | { ok: false; route: string; status: number; body: Record<string, unknown>; problems: string[] };

interface Operation {
  parameters?: { name: string; in: string; required?: boolean }[];
  requestBody?: { required?: boolean; content: Record<string, { schema: Record<string, unknown> }> };
  servers?: { url: string }[];
}

interface Route {
  template: string;
  segments: (string | { name: string })[];
  item: Record<string, Operation>;
}

const SPEC_FILE = new URL("../fixtures/specs/line-messaging-api/messaging-api.yml", import.meta.url);
const WEBHOOK_FILE = new URL("../fixtures/specs/line-messaging-api/webhook.yml", import.meta.url);
const DATA_HOST = "https://api-data.line.me";
const METHODS = ["get", "put", "post", "delete", "patch"];

const COMPILE_OPTIONS = {
  allErrors: true,
  verbose: true,
  inlineRefs: false,
  validateSchema: false,
  strict: false,
  code: { optimize: false, source: true, formats: _`require("ajv-formats/dist/formats").fullFormats` },
} as const;

const documents = new Map<string, Record<string, unknown>>();
let routes: Route[] | undefined;
let ajv: Ajv2020 | undefined;
let webhookValidator: ValidateFunction | undefined;
let webhookAjv: Ajv2020 | undefined;
let fingerprint: string | undefined;
const validators = new Map<string, ValidateFunction>();

/**
 * Checks one request.
 * @returns `{ ok: true, route }` (route: `POST /v2/bot/message/reply`), or LINE's answer and every problem.
 */
export function checkLineRequest(request: LineRequest): LineCheck {
  const own = `${request.method} ${request.path}`;
  const segments = request.path.slice(1).split("/").map(decodeURIComponent);
  const matching = loadRoutes().filter(
    (r) =>
      r.segments.length === segments.length &&
      r.segments.every((s, i) => (typeof s === "string" ? s === segments[i] : segments[i] !== "")),
  );
  const method = request.method.toLowerCase();
  const route = matching.find((r) => METHODS.includes(method) && r.item[method]);
  if (!route) return refused(own, 404, { message: "Not found" }, [`${own}: no such operation in the Messaging API`]);
  const name = `${request.method} ${route.template}`;
  const operation = route.item[method]!;
  const problems: SpecProblem[] = [];
  const host = operation.servers?.some((s) => s.url === DATA_HOST) ? "data" : "api";
  if (host !== request.host)
    return refused(name, 404, { message: "Not found" }, [
      `${name} is served by ${host === "data" ? "api-data.line.me (LINE_DATA_API_URL)" : "api.line.me (LINE_API_URL)"}, not the ${request.host} host`,
    ]);
  const query = (operation.parameters ?? []).filter((p) => p.in === "query");
  for (const key of request.query.keys())
    if (!query.some((p) => p.name === key))
      problems.push({ path: [key], keyword: "query", message: "not a query parameter of this operation", params: {} });
  const json = operation.requestBody?.content["application/json"];
  if (request.binary) {
    const content = Object.keys(operation.requestBody?.content ?? {});
    if (!content.some((type) => type !== "application/json"))
      problems.push({ path: [], keyword: "requestBody", message: "this operation takes no binary body", params: {} });
  } else if (request.body === undefined) {
    if (operation.requestBody?.required)
      problems.push({ path: [], keyword: "required", message: "this operation needs a JSON body", params: {} });
  } else if (!json) {
    problems.push({ path: [], keyword: "requestBody", message: "this operation takes no JSON body", params: {} });
  } else {
    let validate = validators.get(name);
    if (!validate) {
      fingerprint ??= specFingerprint([SPEC_FILE, new URL(import.meta.url)]);
      validate = cachedValidator(fingerprint, `line-${name}`, () => ({
        ajv: bodyAjv(),
        validate: bodyAjv().compile(json.schema),
      }));
      validators.set(name, validate);
    }
    if (!validate(request.body)) problems.push(...specProblems(bodyAjv(), validate.errors ?? []));
  }
  if (problems.length === 0) return { ok: true, route: name };
  return refused(
    name,
    400,
    {
      message: `The request body has ${problems.length} error(s)`,
      details: problems.map((p) => ({ message: p.message, property: formatPath(p.path) })),
    },
    problems.map(problemLine),
  );
}

function refused(route: string, status: number, body: Record<string, unknown>, problems: string[]): LineCheck {
  return { ok: false, route, status, body, problems };
}

function loadRoutes(): Route[] {
  if (routes) return routes;
  const paths = loadDocument(SPEC_FILE).paths as Record<string, Route["item"]>;
  routes = Object.entries(paths).map(([template, item]) => ({
    template,
    item,
    segments: template
      .slice(1)
      .split("/")
      .map((s) => (/^\{.+\}$/.test(s) ? { name: s.slice(1, -1) } : s)),
  }));
  // A literal segment wins over a parameter (`/v2/bot/message/reply` before `/v2/bot/message/{messageId}`…).
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
  ajv = new Ajv2020(COMPILE_OPTIONS);
  addFormats(ajv);
  ajv.addSchema(loadDocument(SPEC_FILE, "line-api"), "line-api");
  return ajv;
}

/**
 * Checks a webhook request body the fake is about to send (its own events) against LINE's
 * `webhook.yml` (`CallbackRequest`: `destination`, events of each type with their required fields,
 * no field the description does not define), so the tests feed the bot only events LINE could send.
 * @returns the problems, one line each; empty when the body is valid.
 */
export function checkLineWebhookBody(body: unknown): string[] {
  if (!webhookValidator) {
    webhookAjv = new Ajv2020(COMPILE_OPTIONS);
    addFormats(webhookAjv);
    webhookAjv.addSchema(loadDocument(WEBHOOK_FILE, "line-webhook"), "line-webhook");
    webhookValidator = webhookAjv.compile({ $ref: "line-webhook#/components/schemas/CallbackRequest" });
  }
  if (webhookValidator(body)) return [];
  return specProblems(webhookAjv!, webhookValidator.errors ?? []).map(problemLine);
}

/**
 * messaging-api.yml with {@link LINE_SPEC_EXCEPTIONS} applied and made checkable by Ajv:
 * - every schema with a `discriminator` (`Message`, `Template`, `Action`, …) becomes a dispatch on
 *   its property (`type` must be one of the mapping's keys, and the object must match the schema
 *   that key names); its own properties move to `<Name>Base`, which the mapped schemas' `allOf`
 *   now refers to;
 * - a mapped schema refuses properties none of its parts defines (`unevaluatedProperties: false`);
 *   any other object schema that lists its `properties` refuses others (`additionalProperties: false`);
 * - `$ref`s are made absolute (`line-api#/components/…`) so one alternative compiles on its own.
 */
function loadDocument(file: URL, id = "line-api"): Record<string, unknown> {
  const cached = documents.get(file.href);
  if (cached) return cached;
  const doc = parse(readFileSync(file, "utf8")) as Record<string, unknown>;
  if (file === SPEC_FILE) for (const exception of LINE_SPEC_EXCEPTIONS) setAt(doc, exception.at, exception.value);
  const schemas = (doc.components as { schemas: Record<string, Record<string, unknown>> }).schemas;
  const mapped = new Set<string>();
  const bases = new Set<string>();
  for (const [name, schema] of Object.entries(schemas)) {
    const discriminator = schema.discriminator as { propertyName: string; mapping: Record<string, string> } | undefined;
    if (!discriminator) continue;
    const base = `${name}Base`;
    bases.add(base);
    const { discriminator: _drop, ...rest } = schema;
    schemas[base] = rest;
    const property = discriminator.propertyName;
    for (const target of Object.values(discriminator.mapping)) {
      const targetName = target.split("/").at(-1)!;
      mapped.add(targetName);
      const targetSchema = schemas[targetName]!;
      for (const part of (targetSchema.allOf as Record<string, unknown>[] | undefined) ?? [])
        if (part.$ref === `#/components/schemas/${name}`) part.$ref = `#/components/schemas/${base}`;
    }
    schemas[name] = {
      type: "object",
      required: [property],
      properties: { [property]: { type: "string", enum: Object.keys(discriminator.mapping) } },
      allOf: Object.entries(discriminator.mapping).map(([value, target]) => ({
        if: { properties: { [property]: { const: value } }, required: [property] },
        then: { $ref: target },
      })),
    };
  }
  for (const [name, schema] of Object.entries(schemas)) {
    if (mapped.has(name)) schema.unevaluatedProperties = false;
    else if (!bases.has(name)) closeObjects(schema);
  }
  closeObjects(doc.paths);
  absoluteRefs(doc, id);
  documents.set(file.href, doc);
  return doc;
}

/** `additionalProperties: false` on every object schema with `properties` and no `allOf` of its own (not descending into `$ref`s). */
function closeObjects(node: unknown): void {
  if (Array.isArray(node)) return node.forEach(closeObjects);
  if (typeof node !== "object" || node === null) return;
  const schema = node as Record<string, unknown>;
  if (
    schema.properties &&
    typeof schema.properties === "object" &&
    schema.additionalProperties === undefined &&
    schema.allOf === undefined
  )
    schema.additionalProperties = false;
  for (const [key, value] of Object.entries(schema)) if (key !== "allOf") closeObjects(value);
}

function absoluteRefs(node: unknown, id: string): void {
  if (Array.isArray(node)) return node.forEach((item) => absoluteRefs(item, id));
  if (typeof node !== "object" || node === null) return;
  const schema = node as Record<string, unknown>;
  if (typeof schema.$ref === "string" && schema.$ref.startsWith("#/")) schema.$ref = `${id}${schema.$ref}`;
  for (const value of Object.values(schema)) absoluteRefs(value, id);
}

function setAt(doc: Record<string, unknown>, pointer: string, value: unknown): void {
  const keys = pointer.split("/").slice(1);
  let node = doc;
  for (const key of keys.slice(0, -1)) {
    if (typeof node[key] !== "object" || node[key] === null)
      throw new Error(`LINE_SPEC_EXCEPTIONS: ${pointer} is not in messaging-api.yml`);
    node = node[key] as Record<string, unknown>;
  }
  node[keys.at(-1)!] = value;
}
