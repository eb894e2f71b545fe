/**
 * attnkit/worker: attnkit run in a worker (a module Web Worker in browsers, a
 * worker_threads Worker in Node). Every call of the synchronous API, returning a
 * Promise; see docs/api-js.md, "Async and workers".
 */
import type { AsyncAttnkit, AsyncAttnkitWithModel, WorkerOptions } from "./attnkit.js";

export type * from "./attnkit.js";
export { AttnkitError, AttnkitTypeError } from "./attnkit.js";

/**
 * Starts a worker that loads attnkit with `options` (those of createAttnkit, and
 * the worker's: transfer, workerUrl). Rejects as createAttnkit would, with the
 * same errors. Call dispose() when done (an idle worker never keeps Node alive).
 */
export function createAttnkitWorker(
  options: WorkerOptions & { model: true },
): Promise<AsyncAttnkitWithModel>;
export function createAttnkitWorker(options?: WorkerOptions): Promise<AsyncAttnkit>;
export default createAttnkitWorker;
