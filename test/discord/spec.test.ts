/**
 * The fake Discord checks every REST request against Discord's OpenAPI description
 * (test/fakes/discord-spec.ts), here through the real @discordjs/rest client. Each refused request
 * is answered as Discord answers and recorded as a violation, which the test takes and asserts on
 * (else the harness would fail it).
 */
import { DiscordAPIError, REST, Routes } from "discord.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { checkDiscordRequest, DISCORD_SPEC_EXCEPTIONS } from "../fakes/discord-spec.js";
import { FakeDiscord } from "../fakes/discord.js";

let fake: FakeDiscord;
let rest: REST;
beforeAll(async () => {
  fake = await FakeDiscord.start();
  rest = new REST({ api: fake.apiUrl, retries: 0 }).setToken(fake.token);
});
afterAll(async () => {
  await fake?.close();
});

async function refusal(p: Promise<unknown>): Promise<DiscordAPIError> {
  const e = await p.then(
    () => undefined,
    (err: unknown) => err,
  );
  expect(e).toBeInstanceOf(DiscordAPIError);
  return e as DiscordAPIError;
}

/** `[route, problems]` of the violations recorded since the last call. */
function violations(): [string, string[]][] {
  return fake.takeSpecViolations().map((v) => [v.request, v.problems]);
}

describe("the fake Discord follows Discord's OpenAPI description", () => {
  it("refuses a route Discord does not have (404), a method it does not take (405), a malformed snowflake and an undeclared query parameter", async () => {
    expect(await refusal(rest.get("/channels/1/messages/2/pins" as never))).toMatchObject({ status: 404, code: 0 });
    expect(await refusal(rest.put(Routes.channelTyping(fake.channelId)))).toMatchObject({ status: 405, code: 0 });
    expect(await refusal(rest.post(Routes.channelTyping("general")))).toMatchObject({ status: 400, code: 50035 });
    await refusal(
      rest.get(Routes.channelMessage(fake.channelId, "1"), { query: new URLSearchParams({ with_reactions: "true" }) }),
    );
    expect(violations()).toEqual([
      [
        "GET /api/v10/channels/1/messages/2/pins",
        ["GET /api/v10/channels/1/messages/2/pins: no such route in Discord's API"],
      ],
      [
        "PUT /api/v10/channels/810000000000000001/typing",
        ["PUT /api/v10/channels/810000000000000001/typing: /channels/{channel_id}/typing has no PUT"],
      ],
      [
        "POST /channels/{channel_id}/typing",
        [
          'channel_id: "general" must match pattern "^(0|[1-9][0-9]*)$"',
          'channel_id: "general" must match format "snowflake"',
        ],
      ],
      ["GET /channels/{channel_id}/messages/{message_id}", ["with_reactions: not a query parameter of this route"]],
    ]);
  });

  it("validates a message body against its schema, nested objects and unions included, and refuses fields the spec does not define", async () => {
    const create = (body: unknown) => refusal(rest.post(Routes.channelMessages(fake.channelId), { body }));
    const unknown = await create({ content: "hi", colour: 3 });
    expect(unknown).toMatchObject({
      status: 400,
      code: 50035,
      rawError: { errors: { colour: { _errors: [{ message: "not a field the spec defines here" }] } } },
    });
    await create({ content: "hi", allowed_mentions: { parse: ["user"] } });
    await create({ content: "hi", message_reference: { message_id: 42 } });
    await create({
      content: "hi",
      components: [{ type: 1, components: [{ type: 2, style: 1, label: "x".repeat(81), custom_id: "a" }] }],
    });
    await create({ content: "hi", embeds: [{ title: "t", colour: 5 }] });
    expect(violations().map(([, problems]) => problems)).toEqual([
      ["colour: not a field the spec defines here"],
      ['allowed_mentions.parse[0]: must be one of ["users","roles","everyone"]'],
      ["message_reference.message_id: must be string"],
      ["components[0].components[0].label: must NOT have more than 80 characters"],
      ["embeds[0].colour: not a field the spec defines here"],
    ]);
  });

  it("counts content in characters (code points), up to the 2000 the docs give a bot, not the spec's 4000", async () => {
    await rest.post(Routes.channelMessages(fake.channelId), { body: { content: "🎉".repeat(2000) } });
    await refusal(rest.post(Routes.channelMessages(fake.channelId), { body: { content: "a".repeat(2001) } }));
    const sent = fake.sent.at(-1)!;
    await refusal(rest.patch(Routes.channelMessage(sent.channelId, sent.id), { body: { content: "b".repeat(2001) } }));
    expect(violations().map(([, problems]) => problems)).toEqual([
      ["content: must NOT have more than 2000 characters"],
      ["content: must NOT have more than 2000 characters"],
    ]);
    expect(DISCORD_SPEC_EXCEPTIONS.map((e) => [e.at, e.value])).toEqual([
      ["/components/schemas/MessageCreateRequest/properties/content/maxLength", 2000],
      ["/components/schemas/MessageEditRequestPartial/properties/content/maxLength", 2000],
    ]);
    for (const e of DISCORD_SPEC_EXCEPTIONS) expect(e.docs).toMatch(/^https:\/\/discord\.com\/developers\/docs\//);
  });

  it("checks a multipart body's payload_json and the names of its file parts", async () => {
    const files = [{ name: "note.txt", data: Buffer.from("hello") }];
    await rest.post(Routes.channelMessages(fake.channelId), {
      body: { content: "with a file", attachments: [{ id: "0", filename: "note.txt" }] },
      files,
    });
    await refusal(
      rest.post(Routes.channelMessages(fake.channelId), {
        body: { content: "with a file", enforce_nonce: "yes" },
        files,
      }),
    );
    expect(violations().map(([, problems]) => problems)).toEqual([["enforce_nonce: must be boolean,null"]]);
  });

  it("refuses enforce_nonce in an interaction callback's data and tts in an edit of the original response: Discord defines neither there", () => {
    const callback = (data: Record<string, unknown>) =>
      checkDiscordRequest({
        method: "POST",
        path: `/api/v10/interactions/${fake.applicationId}/token/callback`,
        query: new URLSearchParams({ with_response: "false" }),
        body: { type: 4, data },
      });
    expect(callback({ content: "hi", tts: false, flags: 64, allowed_mentions: { parse: [] }, components: [] })).toEqual(
      { ok: true, route: "POST /interactions/{interaction_id}/{interaction_token}/callback" },
    );
    expect(callback({ content: "hi", tts: false, enforce_nonce: false })).toMatchObject({
      ok: false,
      status: 400,
      problems: ["data.enforce_nonce: not a field the spec defines here"],
    });
    const edit = checkDiscordRequest({
      method: "PATCH",
      path: `/api/v10/webhooks/${fake.applicationId}/token/messages/@original`,
      query: new URLSearchParams(),
      body: { content: "hi", tts: false },
    });
    expect(edit).toMatchObject({ ok: false, problems: ["tts: not a field the spec defines here"] });
  });
});
