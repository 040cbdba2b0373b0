/**
 * `/stop` and the Stop button as commands see them (issue 42): both ask the worker writing the
 * conversation's answer to stop it (`requestStop`), and answer the person in a few words.
 */
import { isAdmin } from "../access/policy.js";
import type { CommandInvocation, CommandServices } from "../commands/command.js";
import { localize, STOP_TEXT, type Locale } from "../i18n.js";
import type { Platform } from "../queue/incoming.js";
import { parseStopButton, type StopOutcome, type StopRequest } from "./stops.js";

/** The stop side of the commands: sends a stop request (`requestStop` over the adapter's Redis). */
export interface StopServices {
  /** @throws when Redis is unreachable. */
  request(request: StopRequest): Promise<StopOutcome>;
}

/** The words for a stop request's outcome. */
function noticeOf(outcome: StopOutcome, locale: Locale): string {
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
export async function stopCommand(inv: CommandInvocation, services: CommandServices): Promise<string> {
  if (!services.stops) return localize(inv.locale, STOP_TEXT.nothing);
  const outcome = await services.stops.request({
    platform: inv.platform,
    chatId: inv.chatId,
    ...(inv.topicId ? { topicId: inv.topicId } : {}),
    userId: inv.userId,
    admin: isAdmin(services.config, inv),
    ...(inv.chatKind === "group" && inv.isGroupAdmin ? { isGroupAdmin: inv.isGroupAdmin } : {}),
  });
  services.log.info({ platform: inv.platform, chatId: inv.chatId, outcome }, "/stop");
  return noticeOf(outcome, inv.locale);
}

/** A press on a Stop button (`sp:<stop id>`), as the command runner gets it. */
export interface StopPress {
  data: string;
  platform: Platform;
  chatId: string;
  topicId?: string | undefined;
  chatKind?: "dm" | "group" | undefined;
  userId: string;
  locale: Locale;
  isGroupAdmin?: (() => Promise<boolean>) | undefined;
}

/**
 * A press on a Stop button: stops that answer when it is still being written and the presser
 * asked or administers the group; else says why nothing happened.
 * @returns the notice for the presser. @throws when Redis is unreachable.
 */
export async function pressStopButton(press: StopPress, services: CommandServices): Promise<string> {
  const id = parseStopButton(press.data);
  if (!id || !services.stops) return localize(press.locale, STOP_TEXT.finishedAlready);
  const outcome = await services.stops.request({
    platform: press.platform,
    chatId: press.chatId,
    ...(press.topicId ? { topicId: press.topicId } : {}),
    userId: press.userId,
    id,
    admin: isAdmin(services.config, press),
    ...(press.chatKind === "group" && press.isGroupAdmin ? { isGroupAdmin: press.isGroupAdmin } : {}),
  });
  services.log.info({ platform: press.platform, chatId: press.chatId, outcome }, "Stop button pressed");
  return noticeOf(outcome, press.locale);
}
