import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { afterAll, expect, it } from "vitest";

const run = promisify(execFile);
const root = fileURLToPath(new URL("../../", import.meta.url));
const pkg = JSON.parse(await readFile(path.join(root, "package.json"), "utf8")) as {
  type: string;
  scripts: Record<string, string>;
};
await mkdir(path.join(root, ".data"), { recursive: true });
const project = await mkdtemp(path.join(root, ".data", "clean-"));
afterAll(() => rm(project, { recursive: true, force: true }));

it("npm run build cleans dist/ before compiling, so a deleted tool does not keep loading", () => {
  expect(pkg.scripts.build).toBe("npm run clean && tsc -p tsconfig.build.json");
});

it("npm run clean removes dist/ (and succeeds when there is none), in an ESM package", async () => {
  // A copy of the real scripts in a project whose dist/ holds a tool deleted from the sources.
  await writeFile(
    path.join(project, "package.json"),
    JSON.stringify({ name: "clean-test", private: true, type: pkg.type, scripts: { clean: pkg.scripts.clean } }),
  );
  await mkdir(path.join(project, "dist", "tools"), { recursive: true });
  await writeFile(path.join(project, "dist", "tools", "deleted_tool.js"), "export default 1;\n");
  await writeFile(path.join(project, "keep.txt"), "not in dist\n");
  const npm = process.platform === "win32" ? "npm.cmd" : "npm";
  await run(npm, ["run", "--silent", "clean"], { cwd: project });
  expect(existsSync(path.join(project, "dist"))).toBe(false);
  expect(existsSync(path.join(project, "keep.txt"))).toBe(true);
  await run(npm, ["run", "--silent", "clean"], { cwd: project });
  expect(existsSync(path.join(project, "dist"))).toBe(false);
}, 60_000);
