/**
 * Links in the model's answers that must not be shown as they are written. The model writes
 * Markdown, and a prompt-injected page or file can make it write `[https://bank.example](https://evil.example)`:
 * a link whose text shows one address and opens another. Telegram's `tg://proxy` and `tg://socks`
 * links (and their `t.me/proxy`, `t.me/socks` forms) change the reader's connection settings in
 * one tap. The adapters' renderers ask here and show such links honestly.
 *
 * Sources: Telegram deep links, https://core.telegram.org/api/links#mtproxy-links and
 * https://core.telegram.org/api/links#socks5-proxy-links.
 */
import type { Token } from "marked";
import { INVISIBLE } from "./plain-text.js";

/** A label that writes an address: a scheme (`https://`, `tg://`…), or `www.` at a word start. */
const WRITES_URL = /(?:^|[^\p{L}\p{N}])(?:[a-z][a-z0-9+.-]*:\/\/|www\.)/u;
/** A whole label that is a host name (dots, a final label of letters), maybe with a port and a path. */
const IS_HOST = /^((?:[\p{L}\p{N}](?:[\p{L}\p{N}-]*[\p{L}\p{N}])?\.)+\p{L}{2,63})(?::\d{1,5})?(?:[/?#]\S*)?$/u;

/** How a reader sees text: compatibility forms folded (full-width `ｂａｎｋ．ｃｏｍ`), invisible characters gone, lower case. */
function asSeen(text: string): string {
  return text.normalize("NFKC").replace(INVISIBLE, "").trim().toLowerCase();
}

/** The host of `href` without a leading `www.`, lower case (undefined when it has none). */
function hostOf(href: string): string | undefined {
  try {
    const host = new URL(href).hostname.toLowerCase();
    return host === "" ? undefined : host.replace(/^www\./, "");
  } catch {
    return undefined;
  }
}

/**
 * Whether a link's visible `label` looks like an address other than its target `href`: the label
 * writes a URL (a scheme, or `www.`) that is not the target's, or is a host name (maybe with a
 * path) other than the target's host. The renderer then shows the real target instead of the label.
 * A label that is ordinary words (`the forecast`) is never mislabelled, whatever the target.
 *
 * @param label - the link's text as the reader sees it (Markdown removed).
 * @param href - the link's target.
 */
export function isMislabelledLink(label: string, href: string): boolean {
  const seen = asSeen(label);
  if (seen === "" || seen === asSeen(href) || seen === asSeen(href).replace(/\/$/, "")) return false;
  const target = hostOf(href);
  if (WRITES_URL.test(seen)) {
    const written = /[a-z][a-z0-9+.-]*:\/\/\S+|www\.\S+/u.exec(seen)?.[0];
    const writtenHost = written ? hostOf(written.startsWith("www.") ? `http://${written}` : written) : undefined;
    return writtenHost === undefined || writtenHost !== target;
  }
  const host = IS_HOST.exec(seen)?.[1]?.replace(/^www\./, "");
  return host !== undefined && host !== target;
}

/**
 * Whether `href` is a Telegram proxy link (`tg://proxy`, `tg://socks`, `https://t.me/proxy`,
 * `https://t.me/socks`, also on `telegram.me` and `telegram.dog`), which must not be clickable in
 * the bot's messages.
 */
export function isProxyLink(href: string): boolean {
  const seen = asSeen(href);
  return (
    /^tg:(?:\/\/)?(?:proxy|socks)(?:[/?#]|$)/.test(seen) ||
    /^(?:https?:\/\/)?(?:www\.)?(?:t|telegram)\.(?:me|dog)\/(?:proxy|socks)(?:[/?#]|$)/.test(seen)
  );
}

/** The text of marked's inline tokens (a link's label) as a reader sees it: formatting removed. */
export function labelText(tokens: readonly Token[] | undefined): string {
  return (tokens ?? [])
    .map((t) =>
      "tokens" in t && Array.isArray(t.tokens)
        ? labelText(t.tokens)
        : "text" in t && typeof t.text === "string"
          ? t.text
          : t.raw,
    )
    .join("");
}
