/**
 * Made-up bot tokens for tests, built at run time so that no literal in the repository looks like a
 * real token, while the values still have the shapes our config checks and log redaction look for.
 */

/**
 * A string with the shape of a Telegram bot token (`<bot id>:<35 characters>`, see the Bot API's
 * "Authorizing your bot"); the part after the colon is `label` padded with `0`.
 */
export function fakeTelegramToken(botId = "123456789", label = "fake_test_token"): string {
  return `${botId}:${label.padEnd(35, "0")}`;
}

/**
 * A string with the shape of a Discord bot token (three base64url parts joined by dots: 24, 6 and
 * 27+ characters), made of obviously fake letters.
 */
export function fakeDiscordToken(): string {
  return ["M" + "x".repeat(23), "fake00", "y".repeat(31)].join(".");
}
