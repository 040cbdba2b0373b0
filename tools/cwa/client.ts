/**
 * Client of the CWA (中央氣象署) open-data REST API, dataset F-C0032-001 (今明 36 小時天氣預報):
 * `GET {base}/v1/rest/datastore/F-C0032-001?locationName=NAME` with the key in the `Authorization`
 * request header, which the API accepts as well as the `Authorization` query parameter (its
 * Swagger page, https://opendata.cwa.gov.tw/dist/opendata-swagger.html, declares the key as an
 * API key that may be a header). Never in the URL: proxies and access logs keep URLs.
 * Response shape and its quirks: `test/fixtures/cwa/README.md` (all values are strings,
 * `success` is the string `"true"`, elements and time windows come in no promised order).
 * No side effects: the tool loader imports this module.
 */
import { z } from "zod";

/** The dataset id of the 36-hour forecast for the 22 counties and cities. */
export const FORECAST_DATASET = "F-C0032-001";

/** Default limit of one request, in ms (the 10 s). */
export const DEFAULT_CWA_TIMEOUT_MS = 10_000;

/** Why a forecast could not be fetched. */
export type CwaErrorKind =
  /** HTTP 401 or 403: the key is missing, wrong or not allowed for this dataset. */
  | "auth"
  /** Another non-2xx HTTP status (`status` is set). */
  | "status"
  /** HTTP 200 with `success` other than `"true"`. */
  | "unsuccessful"
  /** The body is not JSON or not the REST datastore shape (e.g. the file-API document). */
  | "shape"
  /** Success, but no location matched the name. */
  | "no-location"
  /** No answer within the timeout. */
  | "timeout"
  /** The caller's signal aborted the request. */
  | "aborted"
  /** The server could not be reached (DNS, refused connection, reset). */
  | "network";

/**
 * A failed forecast request. The message names what went wrong and never contains the API key
 * or the request URL (which carries the key).
 */
export class CwaError extends Error {
  readonly kind: CwaErrorKind;
  /** HTTP status, when the server answered. */
  readonly status?: number;
  constructor(kind: CwaErrorKind, message: string, status?: number) {
    super(message);
    this.name = "CwaError";
    this.kind = kind;
    this.status = status;
  }
}

/** One forecast window of one location, values as CWA gives them (strings). */
export interface ForecastWindow {
  /** `yyyy-MM-dd HH:mm:ss`, Taipei time, as in the response. */
  startTime: string;
  /** `yyyy-MM-dd HH:mm:ss`, Taipei time. */
  endTime: string;
  /** Weather text (Wx `parameterName`), e.g. `多雲時陰短暫陣雨`. */
  weather: string;
  /** Chance of rain in percent (PoP `parameterName`), e.g. `30`. */
  rainChance: string;
  /** Lowest temperature in °C (MinT). */
  minTemp: string;
  /** Highest temperature in °C (MaxT). */
  maxTemp: string;
  /** Comfort index text (CI `parameterName`), e.g. `舒適`. */
  comfort: string;
}

/** The 36-hour forecast of one location: its windows sorted by start time. */
export interface Forecast {
  locationName: string;
  windows: ForecastWindow[];
}

const TimeEntry = z.object({
  startTime: z.string().regex(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/),
  endTime: z.string().regex(/^\d{4}-\d{2}-\d{2} \d{2}:\d{2}:\d{2}$/),
  parameter: z.object({
    parameterName: z.string(),
    parameterValue: z.string().optional(),
    parameterUnit: z.string().optional(),
  }),
});

const RestDocument = z.object({
  success: z.string(),
  records: z.object({
    location: z.array(
      z.object({
        locationName: z.string(),
        weatherElement: z.array(z.object({ elementName: z.string(), time: z.array(TimeEntry) })),
      }),
    ),
  }),
});

const ELEMENTS = ["Wx", "PoP", "MinT", "MaxT", "CI"] as const;

/** Options of {@link fetchForecast}. */
export interface FetchForecastOptions {
  /** API base ending in `/api` (`CWA_API_BASE`), e.g. `https://opendata.cwa.gov.tw/api`. */
  base: string;
  /** The open-data key (`CWA_API_KEY`); sent as the `Authorization` request header, never in the URL. */
  key: string;
  /** Exact CWA location name, e.g. `臺北市`. */
  locationName: string;
  /** Cancels the request (e.g. the tool call's signal). */
  signal?: AbortSignal;
  /** Limit in ms; default {@link DEFAULT_CWA_TIMEOUT_MS}. */
  timeoutMs?: number;
}

/**
 * Fetches the 36-hour forecast of one location.
 *
 * @returns the location's windows, sorted by start time, each with Wx, PoP, MinT, MaxT and CI
 *   found by element name.
 * @throws {CwaError} for any failure (see {@link CwaErrorKind}); never with the key in its message.
 */
export async function fetchForecast(options: FetchForecastOptions): Promise<Forecast> {
  const url = new URL(`${options.base.replace(/\/+$/, "")}/v1/rest/datastore/${FORECAST_DATASET}`);
  url.searchParams.set("locationName", options.locationName);
  const timeoutMs = options.timeoutMs ?? DEFAULT_CWA_TIMEOUT_MS;
  const timeout = AbortSignal.timeout(timeoutMs);
  const signal = options.signal ? AbortSignal.any([options.signal, timeout]) : timeout;

  let body: unknown;
  try {
    const response = await fetch(url, { signal, headers: { accept: "application/json", authorization: options.key } });
    if (response.status === 401 || response.status === 403) {
      await response.body?.cancel();
      throw new CwaError("auth", `CWA refused the API key (HTTP ${response.status})`, response.status);
    }
    if (!response.ok) {
      await response.body?.cancel();
      throw new CwaError("status", `CWA answered HTTP ${response.status}`, response.status);
    }
    const text = await response.text();
    try {
      body = JSON.parse(text);
    } catch {
      throw new CwaError("shape", "CWA answered with something that is not JSON");
    }
  } catch (error) {
    if (error instanceof CwaError) throw error;
    if (timeout.aborted) throw new CwaError("timeout", `CWA did not answer within ${timeoutMs} ms`);
    if (options.signal?.aborted) throw new CwaError("aborted", "the request was cancelled");
    // The error's own text may carry the URL or headers in some runtimes: never pass it on.
    throw new CwaError("network", "CWA could not be reached");
  }
  return parseForecast(body, options.locationName);
}

/**
 * Reads a REST datastore document of F-C0032-001 and returns the forecast of `locationName`.
 *
 * @throws {CwaError} `unsuccessful` when `success` is not `"true"`; `shape` when the document is
 *   not the REST shape or lacks one of Wx, PoP, MinT, MaxT, CI; `no-location` when the list is
 *   empty or does not contain the name.
 */
export function parseForecast(body: unknown, locationName: string): Forecast {
  if (
    body !== null &&
    typeof body === "object" &&
    "success" in body &&
    (body as { success: unknown }).success !== "true"
  ) {
    throw new CwaError("unsuccessful", "CWA answered without success");
  }
  const parsed = RestDocument.safeParse(body);
  if (!parsed.success) throw new CwaError("shape", "CWA answered with a document that is not the REST datastore shape");
  const location = parsed.data.records.location.find((l) => l.locationName === locationName);
  if (!location) throw new CwaError("no-location", `CWA returned no forecast for ${locationName}`);

  const byName = new Map(location.weatherElement.map((e) => [e.elementName, e.time]));
  for (const name of ELEMENTS) {
    if (!byName.get(name)?.length)
      throw new CwaError("shape", `CWA's forecast for ${locationName} has no ${name} element`);
  }
  const at = (name: (typeof ELEMENTS)[number], startTime: string): string => {
    const entry = byName.get(name)!.find((t) => t.startTime === startTime);
    if (!entry) throw new CwaError("shape", `CWA's forecast for ${locationName} has no ${name} for ${startTime}`);
    return entry.parameter.parameterName;
  };
  const windows = [...byName.get("Wx")!]
    .sort((a, b) => a.startTime.localeCompare(b.startTime))
    .map((t) => ({
      startTime: t.startTime,
      endTime: t.endTime,
      weather: t.parameter.parameterName,
      rainChance: at("PoP", t.startTime),
      minTemp: at("MinT", t.startTime),
      maxTemp: at("MaxT", t.startTime),
      comfort: at("CI", t.startTime),
    }));
  return { locationName: location.locationName, windows };
}
