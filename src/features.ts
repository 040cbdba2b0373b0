/**
 * The bot's features, in one list ({@link FEATURES}); see `src/feature.ts` for the contract and
 * `docs/architecture.md` for how to add one. Adding a feature is its folder and one line here.
 *
 * The hubs walk it: `src/buttons.ts` routes a press by its data's prefix ({@link FeatureSet}),
 * `src/conversations/migrate.ts` moves every feature's stores, and `/reset`
 * (`src/conversations/reset.ts`) clears every feature's reset keys with the history. A feature module must not import this list (it imports
 * `src/feature.ts` only), so the list can import every feature without a cycle.
 */
import type { Feature } from "./feature.js";
import { approvalsFeature } from "./approvals/feature.js";
import { compactionFeature } from "./compaction/feature.js";
import { memoryFeature } from "./memory/feature.js";
import { remindersFeature } from "./reminders/feature.js";
import { settingsFeature } from "./settings/feature.js";
import { stopFeature } from "./stop/feature.js";
import { tasksFeature } from "./tasks/feature.js";

/** Every feature of the bot, in order: commands are listed, and conversation data moved, in this order. */
export const FEATURES: readonly Feature[] = [
  compactionFeature,
  settingsFeature,
  remindersFeature,
  tasksFeature,
  approvalsFeature,
  memoryFeature,
  stopFeature,
];

/** A list of features, and what the hubs ask of them together (see the module comment). */
export class FeatureSet {
  readonly #byPrefix: [string, Feature][];

  /**
   * @throws when two features are named alike, or claim the same button prefix (or one prefix
   *   starts another): a press must belong to one feature.
   */
  constructor(readonly features: readonly Feature[] = FEATURES) {
    const names = new Set<string>();
    this.#byPrefix = [];
    for (const feature of features) {
      if (names.has(feature.name)) throw new Error(`two features are named "${feature.name}"`);
      names.add(feature.name);
      for (const prefix of feature.buttons?.prefixes ?? []) {
        const clash = this.#byPrefix.find(([p]) => p.startsWith(prefix) || prefix.startsWith(p));
        if (clash)
          throw new Error(`features "${clash[1].name}" and "${feature.name}" both claim the button prefix "${prefix}"`);
        this.#byPrefix.push([prefix, feature]);
      }
    }
  }

  /** The feature whose button `data` is (by prefix), or undefined when none is. */
  buttonOwner(data: string): Feature | undefined {
    return this.#byPrefix.find(([prefix]) => data.startsWith(prefix))?.[1];
  }
}

/** The set of {@link FEATURES}, built once. */
export const BOT_FEATURES = new FeatureSet(FEATURES);
