/**
 * `MODELS` (the models a conversation may choose, issue 31) and `MODEL_PRICES` with a price per
 * model: parsed by the real `loadConfig`, every problem named without the value.
 */
import { describe, expect, it } from "vitest";
import { ConfigError, loadConfig, modelLabel, pricesFor } from "../../src/config.js";

function problemsOf(env: Record<string, string>): string[] {
  try {
    loadConfig(env, { purpose: "inspect" });
    return [];
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
}

describe("MODELS", () => {
  it("defaults to ANTHROPIC_MODEL alone", () => {
    expect(loadConfig({}, { purpose: "inspect" }).MODELS).toEqual([{ id: "claude-opus-5", label: "claude-opus-5" }]);
    expect(loadConfig({ ANTHROPIC_MODEL: "claude-haiku-5" }, { purpose: "inspect" }).MODELS).toEqual([
      { id: "claude-haiku-5", label: "claude-haiku-5" },
    ]);
  });

  it("reads ids with optional labels, and puts ANTHROPIC_MODEL first when the list leaves it out", () => {
    const config = loadConfig({ MODELS: " claude-opus-5=Opus , claude-haiku-5=Haiku 快速,," }, { purpose: "inspect" });
    expect(config.MODELS).toEqual([
      { id: "claude-opus-5", label: "Opus" },
      { id: "claude-haiku-5", label: "Haiku 快速" },
    ]);
    expect(modelLabel(config, "claude-haiku-5")).toBe("Haiku 快速");
    expect(modelLabel(config, "other")).toBe("other");
    const added = loadConfig(
      { ANTHROPIC_MODEL: "claude-sonnet-5", MODELS: "claude-haiku-5=Haiku" },
      { purpose: "inspect" },
    );
    expect(added.MODELS.map((m) => m.id)).toEqual(["claude-sonnet-5", "claude-haiku-5"]);
  });

  it("refuses a bad id, an empty or long label and a model named twice", () => {
    const message =
      "MODELS: must be model ids separated by commas, each optionally with a label after = (e.g. " +
      "claude-opus-5=Opus,claude-haiku-5=Haiku); labels at most 40 characters, each id once";
    expect(problemsOf({ MODELS: "claude opus" })).toEqual([message]);
    expect(problemsOf({ MODELS: "claude-haiku-5=" })).toEqual([message]);
    expect(problemsOf({ MODELS: `claude-haiku-5=${"x".repeat(41)}` })).toEqual([message]);
    expect(problemsOf({ MODELS: "claude-haiku-5,claude-haiku-5=Haiku" })).toEqual([message]);
  });
});

describe("MODEL_PRICES per model", () => {
  it("one price list still prices every model, with no per-model entries", () => {
    const config = loadConfig({ MODEL_PRICES: "15,75,18.75,1.5" }, { purpose: "inspect" });
    expect(config.MODEL_PRICES).toEqual({ input: 15, output: 75, cacheWrite: 18.75, cacheRead: 1.5, webSearch: 10 });
    expect(pricesFor(config, "claude-haiku-5")).toEqual({
      input: 15,
      output: 75,
      cacheWrite: 18.75,
      cacheRead: 1.5,
      webSearch: 10,
    });
    expect(pricesFor(loadConfig({}, { purpose: "inspect" }), "claude-opus-5")).toBeUndefined();
  });

  it("model=prices entries separated by ;, with a bare list as the price of every other model", () => {
    const config = loadConfig(
      { MODEL_PRICES: "15,75,18.75,1.5; claude-haiku-5=1,5,1.25,0.1,12" },
      { purpose: "inspect" },
    );
    expect(pricesFor(config, "claude-haiku-5")).toEqual({
      input: 1,
      output: 5,
      cacheWrite: 1.25,
      cacheRead: 0.1,
      webSearch: 12,
    });
    expect(pricesFor(config, "claude-opus-5")).toEqual({
      input: 15,
      output: 75,
      cacheWrite: 18.75,
      cacheRead: 1.5,
      webSearch: 10,
    });
    // The default fields are what /usage used before: the bare list.
    expect(config.MODEL_PRICES).toMatchObject({ input: 15, output: 75 });
  });

  it("without a bare list, ANTHROPIC_MODEL's entry is the default, and it must have one", () => {
    const config = loadConfig(
      { MODEL_PRICES: "claude-haiku-5=1,5,1.25,0.1;claude-opus-5=15,75,18.75,1.5" },
      { purpose: "inspect" },
    );
    expect(config.MODEL_PRICES).toMatchObject({ input: 15, output: 75, cacheWrite: 18.75, cacheRead: 1.5 });
    expect(pricesFor(config, "claude-sonnet-5")).toMatchObject({ input: 15 });
    expect(pricesFor(config, "claude-haiku-5")).toMatchObject({ input: 1 });
    expect(problemsOf({ MODEL_PRICES: "claude-haiku-5=1,5,1.25,0.1" })).toEqual([
      "MODEL_PRICES: needs a price for ANTHROPIC_MODEL: an entry for it (model=prices), or a price list without a model id for every model not named",
    ]);
  });

  it("refuses two bare lists, a model priced twice, a bad model id and a bad list", () => {
    for (const value of [
      "1,2,3,4;5,6,7,8",
      "claude-haiku-5=1,2,3,4;claude-haiku-5=1,2,3,4",
      "bad id=1,2,3,4",
      "claude-haiku-5=1,2,3",
    ]) {
      expect(problemsOf({ MODEL_PRICES: value })[0]).toMatch(
        /^MODEL_PRICES: must be four prices in USD per million tokens/,
      );
    }
  });
});
