// The checkpoint reader for browsers and bundlers (checkpoint.js), built as
// dist/checkpoint.mjs and loaded on the first openCheckpoint. GPT-2's
// tokenizer's ranks are a file beside it, gpt2-ranks.json (js-tiktoken's "gpt2"
// ranks, written there by the build), fetched when a checkpoint first opens:
// found through import.meta.url as the builds' .wasm files are, so that Vite
// emits it as an asset and a bundle that does not split (esbuild without
// --splitting) holds none of it (copy it beside the bundle, as the .wasm files).
import { AttnkitError } from "./errors.js";
import { checkpointReader } from "./checkpoint.js";

export const checkpointMethods = checkpointReader(async () => {
  const url = new URL("./gpt2-ranks.json", import.meta.url);
  try {
    const response = await fetch(url);
    if (!response.ok) throw new Error(`HTTP ${response.status}`);
    return await response.json();
  } catch (e) {
    const err = new AttnkitError(
      `source: expected GPT-2's tokenizer ranks gpt2-ranks.json to load from ${url} (beside ` +
        `checkpoint.mjs: a bundle or a copy of dist/ must keep it), got: ${e?.message ?? e}`,
      { code: "load_failed", parameter: "source" },
    );
    err.cause = e;
    throw err;
  }
});
