// attnkit/worker for browsers and bundlers: createAttnkitWorker() runs the
// package in a module Web Worker, from worker-host.mjs beside this file. The
// worker is made with the literal new Worker(new URL("./worker-host.mjs",
// import.meta.url), { type: "module" }), which bundlers (Vite, webpack 5)
// follow; options.workerUrl moves it.
import { makeWorkerClient } from "./worker-api.js";
import { abortError } from "./worker-wire.js";

export { AttnkitError, AttnkitTypeError } from "./errors.js";

/** Runs attnkit in a module Web Worker: the synchronous API's calls, each returning a Promise. */
export const createAttnkitWorker = makeWorkerClient({
  spawn(url) {
    const worker =
      url === undefined
        ? new Worker(new URL("./worker-host.mjs", import.meta.url), { type: "module" })
        : new Worker(url, { type: "module" });
    return {
      post: (message, transfer) => worker.postMessage(message, transfer),
      listen(onMessage, onFailure) {
        worker.addEventListener("message", (e) => onMessage(e.data));
        worker.addEventListener("error", (e) =>
          onFailure(
            abortError(
              "worker",
              `expected the worker script to run, got ${e.message ? `an error: ${e.message}` : "an error event (is worker-host.mjs served beside worker.mjs, or options.workerUrl right?)"}`,
            ),
          ),
        );
      },
      terminate: () => worker.terminate(),
      busy: () => {},
    };
  },
});

export default createAttnkitWorker;
