// attnkit: the gradients of attention (the backward pass) and the forward for
// training, which also returns each row's log-sum-exp so that a backward call
// given it (options.saved) skips recomputing the forward. Each call crosses
// into wasm once, like the forward calls (marshal.js).
import { toMatrix } from "./convert.js";
import { checkOptions, gradientOutputs, savedInputs } from "./arguments.js";
import { NONE } from "./marshal.js";

/** The options a backward call takes on top of the forward's. */
const BACKWARD_KEYS = ["saved"];
/** Core parameter names of the forward's saved results -> the JS names. */
const SAVED_NAMES = { O: "options.saved.out", lse: "options.saved.lse" };

/** attentionForTraining and attentionBackward over the Marshal `mem`. */
export function gradientMethods(mem) {
  const M = mem.M;
  return {
    attentionForTraining(Q, K, V, options) {
      checkOptions(options);
      const q = toMatrix("Q", Q),
        k = toMatrix("K", K),
        v = toMatrix("V", V);
      const [out, lse] = mem.runWithOptions(
        [q, k, v],
        options,
        [
          { rows: q.rows, cols: v.cols },
          { rows: q.rows, cols: 1, blame: "Q" },
        ],
        ([qv, kv, vv], o, [ov, lv]) => M.attentionForTraining(mem.args(qv, kv, vv, ov, lv, o)),
      );
      return { out, lse };
    },
    attentionBackward(Q, K, V, dO, options) {
      checkOptions(options, BACKWARD_KEYS, ["dQ", "dK", "dV"]);
      const q = toMatrix("Q", Q),
        k = toMatrix("K", K),
        v = toMatrix("V", V),
        d = toMatrix("dO", dO);
      const saved = savedInputs(options, toMatrix);
      const outputs = gradientOutputs(options, [
        { name: "dQ", rows: q.rows, cols: q.cols, blame: "Q" },
        { name: "dK", rows: k.rows, cols: k.cols, blame: "K" },
        { name: "dV", rows: v.rows, cols: v.cols, blame: "V" },
      ]);
      const [dQ, dK, dV] = mem.runWithOptions(
        saved ? [q, k, v, d, ...saved] : [q, k, v, d],
        options,
        outputs,
        ([qv, kv, vv, dv, ov = NONE, lv = NONE], o, [gq, gk, gv]) =>
          M.attentionBackward(mem.args(qv, kv, vv, dv, saved ? 1 : 0, ov, lv, gq, gk, gv, o)),
        SAVED_NAMES,
      );
      return { dQ, dK, dV };
    },
  };
}
