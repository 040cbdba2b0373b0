/**
 * Starting a worker thread that runs one module of the bot (the PDF reader, the JSON Schema
 * checker). Source: https://nodejs.org/api/worker_threads.html#new-workerfilename-options .
 */
import { Worker, type WorkerOptions } from "node:worker_threads";

/**
 * Starts a worker thread running the module `name` (without extension) that sits beside the module
 * whose `import.meta.url` is `from`: its compiled `<name>.js` when `from` is compiled JavaScript,
 * else — in a development checkout and the tests, which run the TypeScript sources — `<name>.ts`
 * through tsx, which a worker thread does not inherit from its parent.
 *
 * @param options - Node's worker options (e.g. `resourceLimits`); `eval` is set here.
 */
export function startModuleThread(from: string, name: string, options: WorkerOptions): Worker {
  if (!from.endsWith(".ts")) return new Worker(new URL(`./${name}.js`, from), options);
  const tsx = import.meta.resolve("tsx/esm/api");
  const entry = new URL(`./${name}.ts`, from).href;
  return new Worker(
    `import(${JSON.stringify(tsx)}).then((tsx) => { tsx.register(); return import(${JSON.stringify(entry)}); });`,
    { ...options, eval: true },
  );
}
