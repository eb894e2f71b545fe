// The checkpoint reader for Node (checkpoint.js), built as
// dist/checkpoint.node.cjs and loaded on the first openCheckpoint. GPT-2's
// tokenizer's ranks are js-tiktoken's "gpt2" module, required when a
// checkpoint first opens.
import { checkpointReader } from "./checkpoint.js";

export const checkpointMethods = checkpointReader(async () => require("js-tiktoken/ranks/gpt2"));
