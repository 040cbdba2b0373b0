/**
 * `/stop` and the Stop button as the adapter side sees them (issue 42): both ask the worker writing
 * the conversation's answer to stop it (`requestStop`), and answer the person in a few words.
 */
import { isAdmin } from "../access/policy.js";
import type { CommandInvocation, CommandServices } from "../commands/command.js";
import type { Config } from "../config.js";
import type { ButtonPress } from "../feature.js";
import { localize, STOP_TEXT, type Locale } from "../i18n.js";
import { parseStopButton, type StopOutcome, type StopRequest } from "./stops.js";

/** The Stop feature's state in an adapter process: sends a stop request (`requestStop` over the adapter's Redis). */
export interface StopServices {
  /** @throws when Redis is unreachable. */
  request(request: StopRequest): Promise<StopOutcome>;
}

/** The words for a stop request's outcome. */
export function stopNotice(outcome: StopOutcome, locale: Locale): string {
  switch (outcome) {
    case "stopping":
      return localize(locale, STOP_TEXT.pressed);
    case "nothing":
      return localize(locale, STOP_TEXT.nothing);
    case "finished":
      return localize(locale, STOP_TEXT.finishedAlready);
    case "not_allowed":
      return localize(locale, STOP_TEXT.notYours);
  }
}

/** `/stop`: stops the answer being written in this conversation (the asker's, or any for a group admin). */
export async function stopCommand(
  inv: CommandInvocation,
  services: CommandServices,
  stops: StopServices,
): Promise<string> {
  const outcome = await stops.request({
    platform: inv.platform,
    chatId: inv.chatId,
    ...(inv.topicId ? { topicId: inv.topicId } : {}),
    userId: inv.userId,
    admin: isAdmin(services.config, inv),
    ...(inv.chatKind === "group" && inv.isGroupAdmin ? { isGroupAdmin: inv.isGroupAdmin } : {}),
  });
  services.log.info({ platform: inv.platform, chatId: inv.chatId, outcome }, "/stop");
  return stopNotice(outcome, inv.locale);
}

/**
 * A press on a Stop button (`sp:<stop id>`): stops that answer when it is still being written and
 * the presser asked or administers the group; else says why nothing happened.
 * @returns the notice for the presser, in `locale`. @throws when Redis is unreachable.
 */
export async function pressStopButton(
  press: ButtonPress,
  locale: Locale,
  stops: StopServices,
  core: { config: Config },
): Promise<{ notice: string; outcome: StopOutcome }> {
  const id = parseStopButton(press.data);
  if (!id) return { notice: localize(locale, STOP_TEXT.finishedAlready), outcome: "finished" };
  const outcome = await stops.request({
    platform: press.platform,
    chatId: press.chatId,
    ...(press.topicId ? { topicId: press.topicId } : {}),
    userId: press.userId,
    id,
    admin: isAdmin(core.config, press),
    ...(press.chatKind === "group" && press.isGroupAdmin ? { isGroupAdmin: press.isGroupAdmin } : {}),
  });
  return { notice: stopNotice(outcome, locale), outcome };
}
