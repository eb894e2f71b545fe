// attnkit/worker for Node ESM: the CommonJS build, re-exported (one instance for both).
import worker from "./worker.node.cjs";

export const { createAttnkitWorker, AttnkitError, AttnkitTypeError } = worker;
export default createAttnkitWorker;
