/**
 * Reads a `multipart/form-data` body for the fake Telegram and Discord, with busboy
 * (`@fastify/busboy`): it accepts what the platforms accept, such as grammY's unquoted
 * `filename=cert.pem`, which undici's `Response.formData()` refuses.
 */
import type { IncomingHttpHeaders } from "node:http";
import { Busboy } from "@fastify/busboy";

/** A multipart body: its text fields and its file parts (bytes counted; kept only with `keepFiles`). */
export interface MultipartBody {
  fields: Map<string, string>;
  files: { name: string; filename: string; size: number; mimeType: string; bytes?: Buffer }[];
}

/**
 * Parses `bytes`, a whole multipart body sent with `headers` (its `content-type` names the boundary).
 * @param options.keepFiles - keep each file part's bytes (`bytes`), e.g. for a fake that answers by content.
 * @throws {Error} when the body is not well-formed multipart.
 */
export function readMultipart(
  headers: IncomingHttpHeaders,
  bytes: Buffer,
  options: { keepFiles?: boolean } = {},
): Promise<MultipartBody> {
  return new Promise((resolve, reject) => {
    const body: MultipartBody = { fields: new Map(), files: [] };
    const parser = Busboy({ headers: headers as { "content-type": string } });
    parser.on("field", (name: string, value: string) => body.fields.set(name, value));
    parser.on(
      "file",
      (name: string, stream: NodeJS.ReadableStream, filename: string, _encoding: string, mimeType: string) => {
        const file: MultipartBody["files"][number] = { name, filename, size: 0, mimeType };
        const chunks: Buffer[] = [];
        body.files.push(file);
        stream.on("data", (chunk: Buffer) => {
          file.size += chunk.length;
          if (options.keepFiles) chunks.push(chunk);
        });
        stream.on("end", () => {
          if (options.keepFiles) file.bytes = Buffer.concat(chunks);
        });
      },
    );
    parser.on("finish", () => resolve(body));
    parser.on("error", reject);
    parser.end(bytes);
  });
}
