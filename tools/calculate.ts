/**
 * calculate: exact decimal arithmetic on a restricted mathjs instance.
 *
 * Following mathjs' security guidance (https://mathjs.org/docs/expressions/security.html): a
 * private instance whose `import`, `createUnit`, `evaluate`, `parse`, `simplify`, `derivative`,
 * `resolve`, `compile` and `reviver` are disabled. On top of that, the expression is parsed once
 * and its syntax tree is evaluated node by node by {@link evaluateNode}, which accepts only
 * numbers, parentheses, + - * / ^ % (and unary minus), the constants pi and e, and an allow-list of
 * functions: no symbols, properties, assignments, function definitions, matrices or units ever
 * reach mathjs' evaluator. Powers are checked before they are computed, so `9^9^9` is refused
 * at once instead of blocking the process.
 *
 * Every value is computed with {@link PRECISION} significant digits, and each step records whether
 * it was exact (checked against the same step done with {@link WIDE_PRECISION} digits, or by the
 * inverse operation for a quotient or a square root). An exact result is shown with all its digits
 * after `=`; one that is not (1/3, sqrt(2), anything with pi or e) is rounded to
 * {@link SHOWN_DIGITS} significant digits and shown after `≈`.
 */
import { createRequire } from "node:module";
import type { BigNumber, ConfigOptions, MathJsInstance, MathNode } from "mathjs";
import { z } from "zod";
import type { Locale } from "../src/config.js";
import { englishNoun, localize, type Localized } from "../src/i18n.js";
import { defineTool, ToolError } from "../src/toolbox/tool.js";

/** Longest accepted expression, in characters. */
export const MAX_EXPRESSION_CHARS = 200;
/** Largest accepted magnitude of any intermediate or final value: 10^100. */
export const MAX_DIGITS = 100;
/**
 * Significant digits a result that is not exact (1/3, sqrt(2), pi) is rounded to, shown after `≈`.
 * Exact results are shown in full after `=`.
 */
export const SHOWN_DIGITS = 20;
/**
 * Significant digits every value is computed with: more than {@link MAX_DIGITS}, so any accepted
 * whole number (below 10^100) and its sums, products and remainders are exact.
 */
export const PRECISION = 2 * MAX_DIGITS + 20;
/**
 * Significant digits the exactness checks compute with: enough that a sum, difference, product or
 * remainder of two exact values (at most {@link PRECISION} digits each, between 10^-100 and 10^100)
 * is never rounded, nor a power whose exact result has at most half as many digits.
 */
export const WIDE_PRECISION = 2000;

/**
 * mathjs from its single-file build (`mathjs/lib/browser/math.js`, listed in the package's
 * `exports`): the same library and version as the package's ES modules, but one file of about
 * 650 KB instead of some 1,200 modules, so loading it takes about 0.2 s instead of 4 s on a busy
 * 2-core machine, in every process that loads the toolbox (each worker, each CLI). Loaded at
 * start-up as before, not on first use, so the first calculation is not held up by it. That build
 * exports mathjs' default instance, whose `create(config)` makes a new instance with all functions
 * (the factories are bound to it: mathjs' `core/create.js`).
 */
const mathjs = createRequire(import.meta.url)("mathjs/lib/browser/math.js") as {
  create: (config: ConfigOptions) => MathJsInstance;
};

const math = mathjs.create({ number: "BigNumber", precision: PRECISION, predictable: true });
const parse = math.parse;

const disabled = (name: string) => () => {
  throw new Error(`Function ${name} is disabled`);
};
math.import(
  Object.fromEntries(
    ["import", "createUnit", "evaluate", "parse", "simplify", "derivative", "resolve", "compile", "reviver"].map(
      (n) => [n, disabled(n)],
    ),
  ),
  { override: true },
);

/** mathjs' BigNumber class (decimal.js) with {@link WIDE_PRECISION} digits, for the exactness checks. */
const Wide = (
  math as unknown as {
    BigNumber: { clone: (config: { precision: number }) => new (value: BigNumber | number) => BigNumber };
  }
).BigNumber.clone({ precision: WIDE_PRECISION });
const wide = (value: BigNumber) => new Wide(value);

/** A computed value, and whether it is exactly the value of its expression (no step was rounded). */
interface Value {
  value: BigNumber;
  exact: boolean;
}

const LIMIT = math.bignumber(`1e${MAX_DIGITS}`);
const TINY = math.bignumber(`1e-${MAX_DIGITS}`);

const always = () => true;

/**
 * Functions a user may call, with their allowed argument counts, and `exact`: given exact arguments,
 * whether the computed value is exact.
 */
const FUNCTIONS = new Map<
  string,
  {
    min: number;
    max: number;
    run: (args: BigNumber[]) => BigNumber;
    exact?: (args: BigNumber[], value: BigNumber) => boolean;
  }
>(
  Object.entries({
    sqrt: {
      min: 1,
      max: 1,
      run: ([x]: BigNumber[]) => math.sqrt(x!) as BigNumber,
      exact: ([x]: BigNumber[], root: BigNumber) => wide(root).times(wide(root)).eq(x!),
    },
    abs: { min: 1, max: 1, run: ([x]: BigNumber[]) => math.abs(x!) as BigNumber },
    round: {
      min: 1,
      max: 2,
      run: ([x, n]: BigNumber[]) => (n === undefined ? math.round(x!) : math.round(x!, n)) as BigNumber,
    },
    floor: { min: 1, max: 1, run: ([x]: BigNumber[]) => math.floor(x!) as BigNumber },
    ceil: { min: 1, max: 1, run: ([x]: BigNumber[]) => math.ceil(x!) as BigNumber },
    min: { min: 1, max: 100, run: (xs: BigNumber[]) => math.min(...xs) as BigNumber },
    max: { min: 1, max: 100, run: (xs: BigNumber[]) => math.max(...xs) as BigNumber },
    mean: {
      min: 1,
      max: 100,
      run: (xs: BigNumber[]) => math.mean(...xs) as BigNumber,
      exact: (xs: BigNumber[], mean: BigNumber) =>
        wide(mean)
          .times(xs.length)
          .eq(xs.reduce((sum, x) => sum.plus(wide(x)), new Wide(0))),
    },
  }),
);

const CONSTANTS = new Map<string, BigNumber>([
  ["pi", math.bignumber(math.pi as unknown as BigNumber)],
  ["π", math.bignumber(math.pi as unknown as BigNumber)],
  ["e", math.bignumber(math.e as unknown as BigNumber)],
]);

/** The names of the constants an expression may use (`pi`, `π`, `e`), e.g. for a reader picking an expression out of a sentence. */
export const CALCULATOR_CONSTANTS: readonly string[] = [...CONSTANTS.keys()];

/** The names of the functions an expression may call (`sqrt`, `round`, `abs` …). */
export const CALCULATOR_FUNCTIONS: readonly string[] = [...FUNCTIONS.keys()];

const OPERATORS = new Set(["add", "subtract", "multiply", "divide", "pow", "mod", "unaryMinus", "unaryPlus"]);

const SAY: Record<string, Localized> = {
  tooLong: {
    "zh-TW": "算式超過 {max} 個字元，請拆成幾個較短的算式。",
    en: "The expression is longer than {max} characters; split it into shorter ones.",
  },
  empty: { "zh-TW": "算式是空的。", en: "The expression is empty." },
  syntax: {
    "zh-TW":
      "看不懂這個算式（{detail}）。只能用數字、+ - * / ^ %、括號和 sqrt、round、abs、min、max、mean、floor、ceil。",
    en: "The expression cannot be read ({detail}). Use numbers, + - * / ^ %, parentheses and sqrt, round, abs, min, max, mean, floor, ceil.",
  },
  unknownChar: {
    "zh-TW": "算式裡有不支援的字元「{char}」：只能用數字、+ - * / ^ %、括號、逗號和函式名稱。",
    en: 'The expression contains an unsupported character "{char}": use digits, + - * / ^ %, parentheses, commas and function names.',
  },
  unknownName: {
    "zh-TW":
      "不認得「{name}」：只能用數字、pi、e，以及 sqrt、round、abs、min、max、mean、floor、ceil 這些函式（不支援變數和單位）。",
    en: 'Unknown name "{name}": only numbers, pi, e and the functions sqrt, round, abs, min, max, mean, floor, ceil are allowed (no variables or units).',
  },
  notAllowed: {
    "zh-TW": "算式裡有不允許的寫法（{what}）：只能做算術，不能存取屬性、指定變數、定義函式、用矩陣或單位。",
    en: "The expression uses something that is not allowed ({what}): only arithmetic; no properties, assignments, function definitions, matrices or units.",
  },
  operator: {
    "zh-TW": "不支援運算子「{op}」：只能用 + - * / ^ % 和括號。",
    en: 'The operator "{op}" is not supported: use + - * / ^ % and parentheses.',
  },
  arity: { "zh-TW": "{name} 需要 {range} 個參數。", en: "{name} takes {range} {arguments}." },
  divZero: { "zh-TW": "不能除以零。", en: "Division by zero is undefined." },
  tooBig: {
    "zh-TW": "結果太大（超過 {digits} 位數），不計算。",
    en: "The result would be too large (more than {digits} digits), so it was not computed.",
  },
  tooSmall: {
    "zh-TW": "結果太接近零（小於 10^-{digits}），不計算。",
    en: "The result would be too close to zero (below 10^-{digits}), so it was not computed.",
  },
  notReal: {
    "zh-TW": "結果不是實數（例如負數開根號）。",
    en: "The result is not a real number (e.g. the square root of a negative number).",
  },
  roundDigits: {
    "zh-TW": "round 的第二個參數要是 0 到 20 的整數。",
    en: "round's second argument must be a whole number from 0 to 20.",
  },
};

class Refusal extends Error {
  constructor(
    readonly key: keyof typeof SAY,
    readonly params: Record<string, string | number> = {},
  ) {
    super(key);
  }
}

function checked(value: BigNumber): BigNumber {
  if (value.isNaN()) throw new Refusal("notReal");
  if (!value.isFinite()) throw new Refusal("tooBig", { digits: MAX_DIGITS });
  if (value.abs().gt(LIMIT)) throw new Refusal("tooBig", { digits: MAX_DIGITS });
  if (!value.isZero() && value.abs().lt(TINY)) throw new Refusal("tooSmall", { digits: MAX_DIGITS });
  return value;
}

/** Refuses `base ^ exponent` when the result would exceed 10^±100 (decided from logarithms, before computing). */
function power(base: BigNumber, exponent: BigNumber): BigNumber {
  if (base.isZero()) {
    if (exponent.isNegative()) throw new Refusal("divZero");
    return checked(math.pow(base, exponent) as BigNumber);
  }
  // In BigNumbers: a base such as 0.9999999999999999999999999999 is 1 as a float, but its power
  // 1e99 is far below 10^-100.
  const digits = (math.multiply(exponent, math.log10(math.abs(base) as BigNumber)) as BigNumber).toNumber();
  if (!Number.isFinite(digits) || digits > MAX_DIGITS) throw new Refusal("tooBig", { digits: MAX_DIGITS });
  if (digits < -MAX_DIGITS) throw new Refusal("tooSmall", { digits: MAX_DIGITS });
  return checked(math.pow(base, exponent) as BigNumber);
}

/**
 * Whether `value`, computed as exact `base ^ exponent`, is exact. Only whole exponents are checked
 * (`4^0.5` counts as not exact). With `base` = m × 10^k (m without trailing zeros) the exact power
 * has as many significant digits as m^|exponent|: when that may exceed {@link WIDE_PRECISION} / 2
 * (so certainly {@link PRECISION}), the value is not exact; otherwise the power is computed with
 * {@link WIDE_PRECISION} digits, exactly, and compared (for a negative exponent, its product with the
 * value must be 1).
 */
function powerIsExact(base: BigNumber, exponent: BigNumber, value: BigNumber): boolean {
  if (!exponent.isInteger()) return false;
  if (base.isZero()) return true;
  if (base.abs().eq(1)) return value.eq(base.isNegative() && !exponent.mod(2).isZero() ? -1 : 1);
  const n = exponent.abs();
  const powerOfTen = base.sd() === 1 && base.abs().toExponential().startsWith("1e");
  if (!powerOfTen && n.times(base.sd()).gt(WIDE_PRECISION / 2)) return false;
  const exact = wide(base).pow(wide(n));
  return exponent.isNegative() ? wide(value).times(exact).eq(1) : value.eq(exact);
}

/**
 * Evaluates an allowed syntax tree to a BigNumber, with whether it is exact. Anything outside the
 * allow-list is refused before any of it is computed.
 *
 * @throws {Refusal} with the reason (a private error type turned into a ToolError by the tool).
 */
function evaluateNode(node: MathNode): Value {
  switch (node.type) {
    case "ConstantNode": {
      const value = (node as MathNode & { value: unknown }).value;
      // mathjs writes a percentage `5%` as `5 / 100` with a plain-number 100. A number literal has at
      // most MAX_EXPRESSION_CHARS < PRECISION digits, so it is read exactly.
      if (typeof value === "number" && Number.isFinite(value))
        return { value: checked(math.bignumber(value)), exact: true };
      if (!math.isBigNumber(value))
        throw new Refusal("notAllowed", { what: typeof value === "string" ? "text" : String(value) });
      return { value: checked(value), exact: true };
    }
    case "ParenthesisNode":
      return evaluateNode((node as MathNode & { content: MathNode }).content);
    case "SymbolNode": {
      const name = (node as MathNode & { name: string }).name;
      const constant = CONSTANTS.get(name);
      if (!constant) throw new Refusal("unknownName", { name });
      return { value: constant, exact: false };
    }
    case "OperatorNode": {
      const op = node as MathNode & { op: string; fn: string; args: MathNode[] };
      if (!OPERATORS.has(op.fn)) throw new Refusal("operator", { op: op.op });
      const args = op.args.map(evaluateNode);
      const exact = args.every((arg) => arg.exact);
      const [a, b] = args.map((arg) => arg.value) as [BigNumber, BigNumber];
      /** `value`, exact when its arguments are and it equals the same step done with WIDE_PRECISION digits. */
      const compared = (value: BigNumber, wideValue: () => BigNumber): Value => ({
        value,
        exact: exact && value.eq(wideValue()),
      });
      switch (op.fn) {
        case "unaryMinus":
          return { value: a.neg(), exact };
        case "unaryPlus":
          return { value: a, exact };
        case "add":
          return compared(checked(math.add(a, b)), () => wide(a).plus(wide(b)));
        case "subtract":
          return compared(checked(math.subtract(a, b)), () => wide(a).minus(wide(b)));
        case "multiply":
          return compared(checked(math.multiply(a, b) as BigNumber), () => wide(a).times(wide(b)));
        case "divide": {
          if (b.isZero()) throw new Refusal("divZero");
          const quotient = checked(math.divide(a, b) as BigNumber);
          return { value: quotient, exact: exact && wide(quotient).times(wide(b)).eq(a) };
        }
        case "mod":
          if (b.isZero()) throw new Refusal("divZero");
          // mathjs' remainder has the sign of the divisor: a - b * floor(a / b).
          return compared(checked(math.mod(a, b)), () => wide(a).minus(wide(b).times(wide(a).div(wide(b)).floor())));
        default: {
          const value = power(a, b);
          return { value, exact: exact && powerIsExact(a, b, value) };
        }
      }
    }
    case "FunctionNode": {
      const call = node as MathNode & { fn: MathNode; args: MathNode[] };
      if (call.fn.type !== "SymbolNode") throw new Refusal("notAllowed", { what: call.fn.type });
      const name = (call.fn as MathNode & { name: string }).name;
      const fn = FUNCTIONS.get(name);
      if (!fn) throw new Refusal("unknownName", { name });
      if (call.args.length < fn.min || call.args.length > fn.max) {
        throw new Refusal("arity", {
          name,
          range: fn.min === fn.max ? fn.min : `${fn.min}-${fn.max}`,
          arguments: englishNoun(fn.max, "argument"),
        });
      }
      const evaluated = call.args.map(evaluateNode);
      const args = evaluated.map((arg) => arg.value);
      if (name === "round" && args[1] && !(args[1].isInteger() && args[1].gte(0) && args[1].lte(20)))
        throw new Refusal("roundDigits");
      const value = checked(fn.run(args));
      return { value, exact: evaluated.every((arg) => arg.exact) && (fn.exact ?? always)(args, value) };
    }
    default:
      throw new Refusal("notAllowed", { what: node.type });
  }
}

/** Full-width and typographic forms people type (１２＋３, ×, ÷, −) in their ASCII meaning. */
function normalise(expression: string): string {
  return expression
    .normalize("NFKC")
    .replace(/[×✕]/g, "*")
    .replace(/÷/g, "/")
    .replace(/[−–]/g, "-")
    .replace(/\s+/g, " ")
    .trim();
}

/**
 * Computes an arithmetic expression exactly, with up to {@link PRECISION} significant digits.
 *
 * @returns `expression = result` with every digit of an exact result (no exponent below 10^100),
 *   e.g. `(1200 + 800) * 0.05 = 100`, `2^70 = 1180591620717411303424`; or `expression ≈ result`
 *   rounded to {@link SHOWN_DIGITS} significant digits when the result is not exact, e.g.
 *   `1/3 ≈ 0.33333333333333333333`, `sqrt(2) ≈ 1.4142135623730950488`.
 * @throws {ToolError} (localized) for an empty or over-long expression, a syntax error, an
 *   unknown name or character, anything that is not arithmetic, division by zero, a non-real
 *   result, or a value beyond 10^±100.
 */
export function calculate(expression: string, locale: Locale): string {
  const say = (key: keyof typeof SAY, params: Record<string, string | number> = {}) =>
    localize(locale, SAY[key]!, params);
  if ([...expression].length > MAX_EXPRESSION_CHARS) throw new ToolError(say("tooLong", { max: MAX_EXPRESSION_CHARS }));
  const text = normalise(expression);
  if (text === "") throw new ToolError(say("empty"));
  const stray = /[^0-9A-Za-z_π.\s+\-*/^%(),]/u.exec(text);
  if (stray) throw new ToolError(say("unknownChar", { char: stray[0] }));
  let tree: MathNode;
  try {
    tree = parse(text);
  } catch (error) {
    throw new ToolError(say("syntax", { detail: (error as Error).message }));
  }
  try {
    const { value, exact } = evaluateNode(tree);
    if (exact) return `${text} = ${math.format(value, { notation: "auto", lowerExp: -12, upperExp: MAX_DIGITS })}`;
    const shown = math.format(value, { notation: "auto", precision: SHOWN_DIGITS, lowerExp: -12, upperExp: 21 });
    return `${text} ≈ ${shown}`;
  } catch (error) {
    if (error instanceof Refusal) throw new ToolError(say(error.key, error.params));
    throw error;
  }
}

/** The calculate tool: `{ expression }` → `expression = result` (see {@link calculate}). */
export default defineTool({
  name: "calculate",
  title: { "zh-TW": "計算", en: "Calculator" },
  summary: {
    "zh-TW": "精確計算算式：總額、折扣、分帳、百分比。",
    en: "Computes arithmetic exactly: totals, discounts, splitting a bill, percentages.",
  },
  description: [
    "Compute an arithmetic expression exactly with decimal numbers (money-safe: 0.1 + 0.2 = 0.3).",
    "Use it for any arithmetic beyond trivial mental math: totals, discounts, tips, splitting a bill, percentages, averages.",
    "Supports + - * / ^ (power), % after a number as percent (200 * 5% = 10; 100 + 5% = 105), " +
      "x % y as remainder, parentheses, pi, e, and sqrt, round(x, digits), abs, floor, ceil, min," +
      " max, mean.",
    "Exact results are given in full (up to 100 digits) after =; a result that cannot be written exactly" +
      " (1/3, sqrt(2), pi) is rounded to 20 significant digits and given after ≈.",
    "Not for units, currency conversion, variables, equations to solve or dates.",
  ].join(" "),
  tags: ["util"],
  readOnly: true,
  input: z.object({
    expression: z
      .string()
      .describe(`The expression, at most ${MAX_EXPRESSION_CHARS} characters, e.g. (1200 + 800) * 0.05`),
  }),
  activity: ({ expression }, locale) =>
    localize(locale, { "zh-TW": "計算：{expression}", en: "Calculating: {expression}" }, { expression }),
  run: ({ expression }, context) => calculate(expression, context.locale),
});
