// attnkit: openCheckpoint and checkpointInfo on a model module, their code
// (checkpoint.js, built as dist/checkpoint.mjs and checkpoint.node.cjs)
// loaded on the first call: a bundler that splits (Vite) keeps it, and GPT-2's
// tokenizer after it, out of every other load. The entry points that hold the
// model builds give this to their loader (`extend`).
import { AttnkitError } from "./errors.js";
import { FILL } from "./calls.js";

/**
 * The checkpoint calls of a model module `api`, over `load()`: a promise of
 * the checkpoint module (the entry point's literal import or require).
 */
export function checkpointCalls(load) {
  let loading = null;
  const module = () =>
    (loading ??= load().catch((e) => {
      loading = null;
      const err = new AttnkitError(
        "source: expected attnkit's checkpoint reader (checkpoint.mjs or checkpoint.node.cjs, " +
          `beside the entry point: a bundle or a copy of dist/ must keep it) to load, got: ${e?.message ?? e}`,
        { code: "load_failed", parameter: "source" },
      );
      err.cause = e;
      throw err;
    }));
  return (api) => {
    let methods = null;
    const calls = async () =>
      (methods ??= (await module()).checkpointMethods(api, (config) => api[FILL](config)));
    return {
      openCheckpoint: async (source, options) => (await calls()).openCheckpoint(source, options),
      checkpointInfo: async (source, options) => (await calls()).checkpointInfo(source, options),
    };
  };
}
