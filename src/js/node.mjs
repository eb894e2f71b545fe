// attnkit for Node ESM: the CommonJS build, re-exported (one instance for both).
import attnkit from "./attnkit.node.cjs";

export const { createAttnkit, AttnkitError, AttnkitTypeError, simdSupported, version } = attnkit;
export default createAttnkit;
