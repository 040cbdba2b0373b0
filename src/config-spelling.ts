/**
 * Misspelled configuration: a variable the schema does not know whose name is close to one it
 * does (`STREAMNG`, `ANTHROPIC_MODLE`, `CWA_APIKEY`) would otherwise be ignored without a word, so
 * the default applies (a budget typo means the default budget). {@link misspelledVariables} finds
 * them; the entry points log one warning each at start-up ({@link warnMisspelledVariables}).
 *
 * The known names are the keys of the one schema (`ConfigSchema` in `src/config.ts`), never a
 * second list. Only names are compared and printed, never values.
 */
import { readFileSync } from "node:fs";
import path from "node:path";
import { parse } from "dotenv";
import { distance } from "fastest-levenshtein";
import { ConfigSchema } from "./config.js";
import type { Logger } from "./log.js";

/** A variable that is probably a misspelling of a known one. */
export interface MisspelledVariable {
  /** The name as written. */
  name: string;
  /** Where it was found: the `.env` file, or the process environment. */
  source: ".env" | "environment";
  /** The known variable it is closest to. */
  suggestion: string;
}

/** Every variable name the schema knows. */
function knownNames(): string[] {
  return Object.keys(ConfigSchema.shape);
}

/**
 * The prefixes the environment is checked for: the first word (up to and including the first `_`)
 * shared by at least two known names (`ANTHROPIC_`, `TELEGRAM_`, `DISCORD_`, `REDIS_`, `CWA_` …).
 * The rest of a shell's environment (`PATH`, `HOME`, other programs' settings) is none of ours.
 */
export function ourPrefixes(known: readonly string[] = knownNames()): string[] {
  const counts = new Map<string, number>();
  for (const name of known) {
    const cut = name.indexOf("_");
    if (cut > 0) counts.set(name.slice(0, cut + 1), (counts.get(name.slice(0, cut + 1)) ?? 0) + 1);
  }
  return [...counts]
    .filter(([, n]) => n >= 2)
    .map(([prefix]) => prefix)
    .sort();
}

/** Edits allowed between a name and a known one: 1 for names up to 5 characters, 2 up to 12, then 3. */
function allowedEdits(name: string): number {
  return name.length <= 5 ? 1 : name.length <= 12 ? 2 : 3;
}

/**
 * True when one of the `_`-separated word lists is the other with one whole word added (at least
 * two words left): `TELEGRAM_TOKEN` and `TELEGRAM_BOT_TOKEN`, `DISCORD_BOT_TOKEN` and `DISCORD_TOKEN`.
 */
function oneWordApart(a: string, b: string): boolean {
  const [short, long] = [a.split("_"), b.split("_")].sort((x, y) => x.length - y.length) as [string[], string[]];
  if (long.length !== short.length + 1 || short.length < 2) return false;
  return long.some((_, skip) => long.filter((_, i) => i !== skip).join("_") === short.join("_"));
}

/**
 * The known name `name` is probably a misspelling of: the closest known name (Levenshtein distance,
 * letter case ignored) within {@link allowedEdits}, else one that is `name` with one word added or
 * left out ({@link oneWordApart}); undefined when `name` is known or none is close.
 */
export function closestKnownName(name: string, known: readonly string[] = knownNames()): string | undefined {
  if (known.includes(name)) return undefined;
  const upper = name.toUpperCase();
  let best: { name: string; edits: number } | undefined;
  for (const candidate of known) {
    const edits = distance(upper, candidate);
    if (edits <= allowedEdits(name) && (!best || edits < best.edits)) best = { name: candidate, edits };
  }
  return best?.name ?? known.find((candidate) => oneWordApart(upper, candidate));
}

/**
 * Unknown variables close to a known name: every name in `dotenv` (the `.env` file's names; the
 * file is the bot's own, so any name in it is meant for the bot), and the names in `env` that start
 * with one of {@link ourPrefixes}. A name in both is reported once, as `.env`.
 *
 * @param sources.dotenv - the names of the `.env` file (values are not read).
 * @param sources.env - the process environment (`process.env`); only its names are read.
 * @returns one entry per misspelled name, `.env` ones first, each list in its own order.
 */
export function misspelledVariables(sources: {
  dotenv: readonly string[];
  env: NodeJS.ProcessEnv;
}): MisspelledVariable[] {
  const known = knownNames();
  const prefixes = ourPrefixes(known);
  const found: MisspelledVariable[] = [];
  const seen = new Set<string>();
  const check = (name: string, source: MisspelledVariable["source"]) => {
    if (seen.has(name)) return;
    seen.add(name);
    const suggestion = closestKnownName(name, known);
    if (suggestion) found.push({ name, source, suggestion });
  };
  for (const name of sources.dotenv) check(name, ".env");
  for (const name of Object.keys(sources.env))
    if (prefixes.some((p) => name.toUpperCase().startsWith(p))) check(name, "environment");
  return found;
}

/**
 * The names in the `.env` file the entry points read (`dotenv/config`: `DOTENV_CONFIG_PATH`, else
 * `.env` in the current folder); an empty list when there is none or it cannot be read.
 */
function dotenvNames(env: NodeJS.ProcessEnv = process.env): string[] {
  try {
    return Object.keys(parse(readFileSync(path.resolve(env.DOTENV_CONFIG_PATH ?? ".env"))));
  } catch {
    return [];
  }
}

/** The warning for one misspelled variable: its name, where it is, the likely intended name; never its value. */
function misspellingWarning(found: MisspelledVariable): string {
  const where = found.source === ".env" ? "in .env" : "in the environment";
  return `${found.name} ${where} is not a variable this bot reads, so it is ignored: did you mean ${found.suggestion}?`;
}

/**
 * Logs one warning per misspelled variable of `.env` and the environment ({@link misspelledVariables}).
 * @returns the warnings' texts (the terminal chat also prints them). Never throws.
 */
export function warnMisspelledVariables(log: Logger, env: NodeJS.ProcessEnv = process.env): string[] {
  const texts: string[] = [];
  for (const found of misspelledVariables({ dotenv: dotenvNames(env), env })) {
    const text = misspellingWarning(found);
    log.warn({ variable: found.name, suggestion: found.suggestion, source: found.source }, text);
    texts.push(text);
  }
  return texts;
}
