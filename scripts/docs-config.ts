/**
 * `npm run docs:config`: writes docs/configuration.md from the configuration schema
 * (`renderConfigurationDoc` in src/config-doc.ts). `npm run docs:config -- --check` writes
 * nothing and exits 1 when the page is out of date (the test in `npm test` checks the same).
 */
import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { CONFIGURATION_DOC, renderConfigurationDoc } from "../src/config-doc.js";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");
const file = path.join(root, CONFIGURATION_DOC);
const page = renderConfigurationDoc();

if (process.argv.includes("--check")) {
  const current = await readFile(file, "utf8").catch(() => "");
  if (current !== page) {
    console.error(`${CONFIGURATION_DOC} is out of date: run npm run docs:config`);
    process.exit(1);
  }
  console.log(`${CONFIGURATION_DOC} is up to date`);
} else {
  await writeFile(file, page);
  console.log(`wrote ${CONFIGURATION_DOC}`);
}
