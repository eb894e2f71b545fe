// attnkit/worker for Node: createAttnkitWorker() runs the package in a
// worker_threads Worker, from worker-host.node.cjs beside this file (an app
// bundle ships that file and attnkit's .node.cjs builds beside it, or passes
// options.workerUrl).
import { makeWorkerClient } from "./worker-api.js";
import { abortError } from "./worker-wire.js";

export { AttnkitError, AttnkitTypeError } from "./errors.js";

const HOST = "worker-host.node.cjs";

// Node's builtins, from process.getBuiltinModule where Node has it (20.16+): an
// ES module bundle of an app turns require into a shim that throws.
function builtin(name) {
  return typeof process.getBuiltinModule === "function"
    ? process.getBuiltinModule(name)
    : require(name);
}

// The folder of this file: dist/ once built, or the bundle's folder when an app
// bundles attnkit (an ES module bundle has no __dirname: the main script's).
function here() {
  const { dirname, resolve } = builtin("node:path");
  if (typeof __dirname === "string") return __dirname;
  return process.argv[1] ? dirname(resolve(process.argv[1])) : process.cwd();
}

/** Runs attnkit in a worker thread: the synchronous API's calls, each returning a Promise. */
export const createAttnkitWorker = makeWorkerClient({
  spawn(url) {
    const { Worker } = builtin("node:worker_threads");
    const { join, resolve } = builtin("node:path");
    // Beside this file by default; else a path, or a file: URL (a URL or its string).
    const script =
      url === undefined
        ? join(here(), HOST)
        : url instanceof URL || String(url).startsWith("file:")
          ? new URL(url)
          : resolve(url);
    const worker = new Worker(script);
    worker.unref(); // an idle worker never keeps Node alive
    return {
      post: (message, transfer) => worker.postMessage(message, transfer),
      listen(onMessage, onFailure) {
        worker.on("message", onMessage);
        worker.on("error", (e) =>
          onFailure(abortError("worker", `expected the worker to run, got an error: ${e.message}`)),
        );
        worker.on("exit", (code) =>
          onFailure(
            abortError("worker", `expected the worker to run, got it exited (code ${code})`),
          ),
        );
      },
      terminate: () => void worker.terminate(),
      busy: (busy) => (busy ? worker.ref() : worker.unref()),
    };
  },
});

export default createAttnkitWorker;
