/**
 * Bounds on what an MCP server hands the bot, in one place so the code, the warnings and the
 * README say the same numbers. A server is code of somebody else: a tool list, a schema or a
 * result it sends must not be able to stall a worker or blow up a request to the model.
 */

/**
 * Largest input schema of one tool, in bytes of its JSON text (UTF-8). A larger one is refused
 * before it is compiled (the tool is skipped with a warning): compiling a schema costs time
 * that grows faster than its size (Ajv took about 2 s for a 400 KB enum of 20 000 values on one
 * core), and the schema is sent to the model with every request it is offered in.
 */
export const MCP_MAX_SCHEMA_BYTES = 64 * 1024;

/** Longest tool description passed to the model, in characters (UTF-16 units); a longer one is cut, with a warning. */
export const MCP_MAX_DESCRIPTION_CHARS = 4000;

/** Most tools used from one server (after `include` / `exclude`); the rest are skipped with one warning. */
export const MCP_MAX_TOOLS_PER_SERVER = 100;

/** Most images of one tool result passed to the model; the rest are left out with a note the model reads. */
export const MCP_MAX_IMAGES_PER_RESULT = 5;

/**
 * Most base64 characters of all images of one tool result together, after the conversion every
 * image of the bot gets (`src/media/convert.ts`: upright, at most 1568 px on the long edge,
 * re-encoded until it fits the API's 5 MB per image). Images past it are left out with a note.
 */
export const MCP_MAX_IMAGE_BYTES_PER_RESULT = 5 * 1024 * 1024;

/**
 * Longest text of one result shown to the person directly (content whose audience is the user
 * only), in characters (code points); the rest is cut with `…(N more characters)`.
 */
export const MCP_MAX_USER_TEXT_CHARS = 2000;
