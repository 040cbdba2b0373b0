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

/**
 * Made-up credentials a person might paste into a chat, one per shape that `redact` knows
 * (`SECRET_SHAPES` of `src/log.ts`), built at run time from obviously fake letters. Each value is
 * one token: no spaces.
 */
export function fakePastedSecrets(): Record<
  "anthropic" | "openai" | "telegram" | "discord" | "github" | "slack" | "google" | "aws" | "jwt",
  string
> {
  const fill = (prefix: string, n: number) => prefix + "fAkE0".repeat(Math.ceil(n / 5)).slice(0, n);
  return {
    anthropic: fill(["sk", "ant", "api03", ""].join("-"), 60),
    openai: fill(["sk", "proj", ""].join("-"), 40),
    telegram: fakeTelegramToken("7123456789", "pasted_by_a_user"),
    discord: fakeDiscordToken(),
    github: fill(["ghp", ""].join("_"), 36),
    slack: fill(["xoxb", "1234", ""].join("-"), 24),
    google: fill("AI" + "za", 35),
    aws: "AK" + "IA" + "FAKE0FAKE0FAKE00",
    jwt: [fill("ey" + "J", 20), fill("ey" + "J", 24), fill("", 30)].join("."),
  };
}
