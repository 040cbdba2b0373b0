/**
 * The bot's features, in one list ({@link FEATURES}); see `src/feature.ts` for the contract and
 * `docs/architecture.md` for how to add one. Adding a feature is its folder and one line here.
 *
 * The hubs walk the list: the command catalogue (`src/commands/catalog.ts`) lists every feature's
 * commands; an adapter process starts the features ({@link startFeatures}, reading what they lend
 * its core, {@link RunningFeatures.lends}) and routes a button press by its data's prefix
 * (`src/buttons.ts`); the worker starts each feature's worker side (what it lends the answers) and
 * runs a BullMQ Worker per feature queue (`src/worker/worker.ts`); a conversation move carries every feature's stores
 * (`conversationStores` of `src/conversations/migrate.ts`) and `/reset` clears every feature's reset keys
 * (`src/conversations/reset.ts`), after asking the started features what it will close
 * ({@link RunningFeatures.beforeReset}). A feature module must not import this list (it imports
 * `src/feature.ts` only), so the list can import every feature without a cycle.
 */
import type { Command } from "./commands/command.js";
import type {
  AdapterServices,
  ButtonAnswer,
  ButtonPress,
  Feature,
  FeatureParts,
  PressCore,
  ResetPlace,
  Started,
} from "./feature.js";
import type { Locale, Localized } from "./i18n.js";
import type { Logger } from "./log.js";
import type { ConversationRef } from "./queue/incoming.js";
import { approvalsFeature } from "./approvals/feature.js";
import { compactionFeature } from "./compaction/feature.js";
import { memoryFeature } from "./memory/feature.js";
import { remindersFeature } from "./reminders/feature.js";
import { settingsFeature } from "./settings/feature.js";
import { stopFeature } from "./stop/feature.js";
import { tasksFeature } from "./tasks/feature.js";

/** Every feature of the bot, in order: commands are listed, and conversation data moved, in this order. */
export const FEATURES: readonly Feature[] = [
  // First, so that /stop comes right after the core's first commands (/help, /tools, /reset) in the menus.
  stopFeature,
  compactionFeature,
  settingsFeature,
  remindersFeature,
  tasksFeature,
  approvalsFeature,
  memoryFeature,
];

/**
 * Checks that no two of `features` share a name or a command, or claim overlapping button prefixes
 * (one prefix starting another): a press, a command must belong to one feature.
 * @throws naming the two features.
 */
export function checkFeatures(features: readonly Feature[]): void {
  const names = new Set<string>();
  const commands = new Map<string, string>();
  const prefixes: [string, string][] = [];
  for (const feature of features) {
    if (names.has(feature.name)) throw new Error(`two features are named "${feature.name}"`);
    names.add(feature.name);
    for (const command of feature.commands ?? []) {
      const other = commands.get(command.name);
      if (other) throw new Error(`features "${other}" and "${feature.name}" both define the command /${command.name}`);
      commands.set(command.name, feature.name);
    }
    for (const prefix of feature.buttons?.prefixes ?? []) {
      const clash = prefixes.find(([p]) => p.startsWith(prefix) || prefix.startsWith(p));
      if (clash)
        throw new Error(`features "${clash[1]}" and "${feature.name}" both claim the button prefix "${prefix}"`);
      prefixes.push([prefix, feature.name]);
    }
  }
}

/** The feature of `features` whose button `data` is (by prefix), or undefined when none is. */
export function buttonOwner(features: readonly Feature[], data: string): Feature | undefined {
  return features.find((f) => f.buttons?.prefixes.some((p) => data.startsWith(p)));
}

/** What the core lends a press besides {@link PressCore}: the conversation's language. */
export interface ButtonCore extends PressCore {
  /** The conversation's `/settings` language, or undefined (none set, or it could not be read). */
  languageOf(conversation: ButtonPress): Promise<Locale | undefined>;
}

/** One started feature: its handlers bound to the state its `start` returned. */
interface Running {
  feature: Feature;
  press?(press: ButtonPress, locale: Locale, core: PressCore): Promise<ButtonAnswer>;
  commands: Command[];
  lends?: Partial<AdapterServices>;
  beforeReset?: Started<unknown>["beforeReset"];
  close?(): Promise<void>;
}

/**
 * The features started in an adapter process ({@link startFeatures}): their commands and button
 * handlers, each bound to its feature's own state.
 */
export class RunningFeatures {
  readonly #running: readonly Running[];
  /** The features' commands, by name, ready to run (`CommandRunner` runs them). */
  readonly commands: ReadonlyMap<string, Command>;
  /** What the features lend the core (`Started.lends`). */
  readonly lends: Partial<AdapterServices>;

  /** @throws when two features share a name, a command or a button prefix, or lend the same part. */
  constructor(running: readonly Running[]) {
    checkFeatures(running.map((r) => r.feature));
    this.#running = running;
    this.commands = new Map(running.flatMap((r) => r.commands.map((c) => [c.name, c] as const)));
    const lends: Partial<AdapterServices> = {};
    const lenders = new Map<string, string>();
    for (const r of running) {
      for (const [name, part] of Object.entries(r.lends ?? {})) {
        const other = lenders.get(name);
        if (other) throw new Error(`features "${other}" and "${r.feature.name}" both lend the core's ${name}`);
        lenders.set(name, r.feature.name);
        Object.assign(lends, { [name]: part });
      }
    }
    this.lends = lends;
  }

  /** The started features. */
  get features(): Feature[] {
    return this.#running.map((r) => r.feature);
  }

  /** The handler of a press on button `data` (by prefix) and its feature's name, or undefined when no started feature owns it. */
  pressHandler(data: string): { name: string; press: NonNullable<Running["press"]> } | undefined {
    const owner = this.#running.find((r) => r.press && r.feature.buttons?.prefixes.some((p) => data.startsWith(p)));
    return owner ? { name: owner.feature.name, press: owner.press! } : undefined;
  }

  /**
   * Asks every started feature, in list order, what a `/reset` of `conversation` will close
   * (`Started.beforeReset`), just before the reset: the lines for the command's reply. A feature
   * whose step throws is logged on `log` and left out. Never throws.
   *
   * @param place - where the reset is asked (whether the platform's prompts stay as sent).
   * @returns the features' lines, in list order (empty when none has anything to say).
   */
  async beforeReset(conversation: ConversationRef, place: ResetPlace, log: Logger): Promise<Localized[]> {
    const lines: Localized[] = [];
    for (const r of this.#running) {
      if (!r.beforeReset) continue;
      try {
        const line = await r.beforeReset(conversation, place);
        if (line) lines.push(line);
      } catch (err) {
        log.warn({ err, feature: r.feature.name }, "could not tell what /reset closes; its reply does not say it");
      }
    }
    return lines;
  }

  /** Stops every feature (closes their queues), last started first. Never throws. */
  async close(): Promise<void> {
    for (const r of [...this.#running].reverse()) await r.close?.().catch(() => {});
  }
}

/** Binds `feature`'s handlers to `state` (what its `start` returned), with the rest of what it started. */
function bind<S>(
  feature: Feature<S>,
  state: S,
  close?: () => Promise<void>,
  lends?: Partial<AdapterServices>,
  beforeReset?: Started<S>["beforeReset"],
): Running {
  const buttons = feature.buttons;
  return {
    feature: feature as Feature,
    ...(lends ? { lends } : {}),
    ...(beforeReset ? { beforeReset } : {}),
    ...(buttons ? { press: (press, locale, core) => buttons.press(press, locale, state, core) } : {}),
    commands: (feature.commands ?? []).map((c) => ({ ...c, run: (inv, services) => c.run(inv, services, state) })),
    ...(close ? { close } : {}),
  };
}

/**
 * Starts `features` in an adapter process (each `Feature.start`, in list order) and binds their
 * commands and buttons to what each returned.
 * @throws when one fails to start, or two lend the same part (those already started are stopped again).
 */
export async function startFeatures(features: readonly Feature[], parts: FeatureParts): Promise<RunningFeatures> {
  checkFeatures(features);
  const running: Running[] = [];
  try {
    for (const feature of features) {
      const started: Started<unknown> = feature.start ? await feature.start(parts) : { state: undefined };
      running.push(
        bind(feature, started.state, started.close?.bind(started), started.lends, started.beforeReset?.bind(started)),
      );
    }
    return new RunningFeatures(running);
  } catch (error) {
    for (const r of [...running].reverse()) await r.close?.().catch(() => {});
    throw error;
  }
}

/**
 * Features already started elsewhere (tests: a harness's own stores), each with its state;
 * `FeatureWith` pairs keep each state typed with its feature.
 */
export function runningFeatures(features: readonly FeatureWith[]): RunningFeatures {
  return new RunningFeatures(features.map((f) => f.bind()));
}

/** A feature with its state (see {@link withState}). */
export interface FeatureWith {
  bind(): Running;
}

/** Pairs `feature` with `state`, for {@link runningFeatures}. */
export function withState<S>(feature: Feature<S>, state: S): FeatureWith {
  return { bind: () => bind(feature, state) };
}
