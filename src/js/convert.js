// attnkit: turning what users pass (nested arrays, {data, rows, cols},
// {data, shape}, options) into checked, flat typed arrays. No attention maths
// here.
import {
  AttnkitError,
  AttnkitTypeError,
  describe,
  kindOf,
  rangeError,
  typeError,
} from "./errors.js";
import { fromExternal } from "./interop.js";

const MAX_DIM = 2 ** 31 - 1;
/** The most elements of any matrix attnkit takes or returns (the core's limit, 1 GiB of floats). */
export const MAX_ELEMENTS = 2 ** 28;

export function isObject(v) {
  // One of the package's own objects (a Model ...) is never an options or
  // config object: its messages then name its kind.
  return v !== null && typeof v === "object" && !kindOf(v);
}

/** Levenshtein distance, for "did you mean" hints. */
export function editDistance(a, b) {
  const row = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; ++i) {
    let diagonal = row[0];
    row[0] = i;
    for (let j = 1; j <= b.length; ++j) {
      const above = row[j];
      row[j] = Math.min(row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] === b[j - 1] ? 0 : 1));
      diagonal = above;
    }
  }
  return row[b.length];
}

/** The valid key closest to `key` (case-insensitive edit distance <= 3), or "". */
export function closestKey(key, valid) {
  let best = "",
    bestDistance = 4;
  for (const v of valid) {
    const d = editDistance(key.toLowerCase(), v.toLowerCase());
    if (d < bestDistance) [best, bestDistance] = [v, d];
  }
  return best;
}

/**
 * Throws an invalid_argument AttnkitError naming the first key of `object` that
 * is not in `valid`, and the closest valid key: a typo such as { W_o } must not
 * silently drop what it meant. With `typosOnly`, other keys are let through
 * unless they are a letter or two from a valid one.
 */
export function checkKeys(name, object, valid, noun = "key", { typosOnly = false } = {}) {
  for (const key of Object.keys(object)) {
    if (valid.includes(key)) continue;
    const near = closestKey(key, valid);
    if (typosOnly && !(near && editDistance(key.toLowerCase(), near.toLowerCase()) <= 2)) continue;
    throw new AttnkitError(
      `${name}.${key}: expected one of ${valid.join(", ")}` +
        `${near ? ` (did you mean ${near}?)` : ""}, got an unknown ${noun}`,
      { parameter: `${name}.${key}` },
    );
  }
}

// The fields a matrix or tensor object is read by.
const DATA_KEYS = ["data", "rows", "cols", "shape"];

/**
 * A matrix or tensor object's other fields are ignored (a result's presentKey,
 * a caller's name), but one a letter or two from a field it is read by
 * ({ col }, { shap }) is a typo that would drop what it meant: refused.
 */
function checkDataTypos(name, object, valid) {
  const others = Object.fromEntries(Object.entries(object).filter(([k]) => !DATA_KEYS.includes(k)));
  checkKeys(name, others, valid, "key", { typosOnly: true });
}

/** "1 value", "3 values". */
export function count(n, noun) {
  return `${n} ${noun}${n === 1 ? "" : "s"}`;
}

/** An overflow AttnkitError if a matrix of `rows` x `cols` is larger than the core takes. */
export function checkElements(name, rows, cols, what = "") {
  if (rows * cols > MAX_ELEMENTS) {
    throw rangeError(
      name,
      `at most 2^28 = ${MAX_ELEMENTS} elements${what}`,
      `[${rows}, ${cols}] = ${rows * cols}`,
      "overflow",
    );
  }
}

// "got 0" for an array whose buffer was detached says why.
function lengthGiven(data) {
  const buffer = ArrayBuffer.isView(data) ? data.buffer : null;
  if (buffer && data.length === 0 && (buffer.detached === true || buffer.byteLength === 0)) {
    return "0 (its ArrayBuffer is detached: transferred, e.g. to a worker, or a view of memory that has since grown)";
  }
  return `${data.length}`;
}

/** A positive (or, with allowZero, non-negative) integer, else a RangeError naming `name`. */
export function checkCount(name, value, { allowZero = false } = {}) {
  if (typeof value !== "number")
    throw typeError(name, allowZero ? "a non-negative integer" : "a positive integer", value);
  if (Number.isInteger(value) && value > MAX_DIM) {
    throw rangeError(name, `at most 2^31 - 1 = ${MAX_DIM}`, describe(value), "overflow");
  }
  if (!Number.isInteger(value) || value < (allowZero ? 0 : 1)) {
    throw rangeError(
      name,
      allowZero ? "a non-negative integer" : "a positive integer",
      describe(value),
    );
  }
  return value;
}

// Copies array-like numbers into a Float32Array, checking each is a number.
function toFloat32(name, data, length) {
  if (data instanceof Float32Array) return data;
  const out = new Float32Array(length);
  for (let i = 0; i < length; ++i) {
    const v = data[i];
    if (typeof v !== "number") throw typeError(`${name}[${i}]`, "a number", v);
    out[i] = v;
  }
  return out;
}

// A DataView is a view without elements: not array-like.
function isArrayLike(v) {
  return Array.isArray(v) || (ArrayBuffer.isView(v) && !(v instanceof DataView));
}

/**
 * True for what results are and what most calls pass: a plain object
 * {data: Float32Array, rows, cols} (a result's shape beside them) whose sizes
 * agree. toMatrix takes it as it is, skipping the checks that only find
 * something to report in other values (a small call's fixed cost); anything
 * else goes through those checks, which name what is wrong.
 */
function isPlainMatrix(value) {
  if (value === null || typeof value !== "object") return false;
  if (Object.getPrototypeOf(value) !== Object.prototype) return false;
  const { data, rows, cols } = value;
  if (!(data instanceof Float32Array) || !Number.isInteger(rows) || !Number.isInteger(cols)) {
    return false;
  }
  if (rows < 1 || cols < 1 || rows * cols !== data.length || data.length > MAX_ELEMENTS) {
    return false;
  }
  for (const key in value) if (!DATA_KEYS.includes(key)) return false;
  return true;
}

/**
 * {data: Float32Array, rows, cols} from a Matrix-like or nested rows. `name` is
 * used in messages ("X", "weights.W_Q"). A matrix or tensor object may carry
 * other fields (a result's presentKey, a caller's name): only data and its
 * shape are read, so results go back in as inputs.
 */
export function toMatrix(name, value) {
  if (isPlainMatrix(value)) return { name, data: value.data, rows: value.rows, cols: value.cols };
  value = fromExternal(name, value); // an onnxruntime or tfjs tensor: its data and shape
  if (Array.isArray(value)) {
    const rows = value.length;
    if (rows === 0) throw rangeError(name, "at least one row", "an empty array");
    const first = value[0];
    if (!isArrayLike(first)) throw typeError(`${name}[0]`, "a row (an array of numbers)", first);
    const cols = first.length;
    if (cols === 0) throw rangeError(`${name}[0]`, "at least one column", "an empty row");
    checkElements(name, rows, cols);
    const data = new Float32Array(rows * cols);
    for (let r = 0; r < rows; ++r) {
      const row = value[r];
      if (!isArrayLike(row)) throw typeError(`${name}[${r}]`, "a row (an array of numbers)", row);
      if (row.length !== cols)
        throw rangeError(
          `${name}[${r}]`,
          `${count(cols, "value")} (as row 0)`,
          `${row.length}`,
          "shape_mismatch",
        );
      for (let c = 0; c < cols; ++c) {
        const v = row[c];
        if (typeof v !== "number") throw typeError(`${name}[${r}][${c}]`, "a number", v);
        data[r * cols + c] = v;
      }
    }
    return { name, data, rows, cols };
  }
  if (isObject(value) && "data" in value && "rows" in value && "cols" in value) {
    checkDataTypos(name, value, ["data", "rows", "cols"]);
    const rows = checkCount(`${name}.rows`, value.rows);
    const cols = checkCount(`${name}.cols`, value.cols);
    checkElements(name, rows, cols);
    const { data } = value;
    if (!isArrayLike(data))
      throw typeError(`${name}.data`, "a Float32Array or an array of numbers", data);
    if (data.length !== rows * cols) {
      throw rangeError(
        `${name}.data`,
        `${count(rows * cols, "value")} (rows ${rows} × cols ${cols})`,
        lengthGiven(data),
        "shape_mismatch",
      );
    }
    return { name, data: toFloat32(`${name}.data`, data, data.length), rows, cols };
  }
  if (isObject(value) && "data" in value && "shape" in value) {
    const t = toTensor(name, value);
    if (t.shape.length !== 2)
      throw rangeError(
        `${name}.shape`,
        "2 dimensions [rows, cols]",
        `[${t.shape.join(", ")}]`,
        "shape_mismatch",
      );
    return { name: t.name, data: t.data, rows: t.shape[0], cols: t.shape[1] };
  }
  throw typeError(name, "a matrix {data, rows, cols} or an array of rows", value);
}

/** {data: Float32Array, shape: number[]} from a Tensor-like or Matrix-like. */
export function toTensor(name, value) {
  value = fromExternal(name, value);
  if (isObject(value) && !Array.isArray(value) && "shape" in value && "data" in value) {
    checkDataTypos(name, value, ["data", "shape"]);
    if (!isArrayLike(value.shape))
      throw typeError(`${name}.shape`, "an array of sizes", value.shape);
    const shape = Array.from(value.shape, (d, i) => checkCount(`${name}.shape[${i}]`, d));
    if (shape.length === 0)
      throw rangeError(`${name}.shape`, "at least one dimension", "[]", "shape_mismatch");
    const size = shape.reduce((a, b) => a * b, 1);
    if (size > MAX_ELEMENTS) {
      throw rangeError(
        name,
        `at most 2^28 = ${MAX_ELEMENTS} elements`,
        `[${shape.join(", ")}] = ${size}`,
        "overflow",
      );
    }
    const { data } = value;
    if (!isArrayLike(data))
      throw typeError(`${name}.data`, "a Float32Array or an array of numbers", data);
    if (data.length !== size) {
      throw rangeError(
        `${name}.data`,
        `${count(size, "value")} (shape [${shape.join(", ")}])`,
        lengthGiven(data),
        "shape_mismatch",
      );
    }
    return { name, data: toFloat32(`${name}.data`, data, size), shape };
  }
  const m = toMatrix(name, value);
  return { name, data: m.data, shape: [m.rows, m.cols] };
}

/** A boolean mask as {data: Uint8Array, rows, cols}. */
export function toMask(name, value) {
  let rows, cols, get;
  if (Array.isArray(value)) {
    rows = value.length;
    if (rows === 0 || !isArrayLike(value[0]))
      throw typeError(name, "a boolean mask: an array of rows", value);
    cols = value[0].length;
    get = (r, c) => {
      const row = value[r];
      if (!isArrayLike(row) || row.length !== cols) {
        throw rangeError(
          `${name}[${r}]`,
          `${count(cols, "value")} (as row 0)`,
          describe(row),
          "shape_mismatch",
        );
      }
      return row[c];
    };
  } else if (isObject(value) && "data" in value && "rows" in value && "cols" in value) {
    checkDataTypos(name, value, ["data", "rows", "cols"]);
    rows = checkCount(`${name}.rows`, value.rows);
    cols = checkCount(`${name}.cols`, value.cols);
    checkElements(name, rows, cols);
    if (!isArrayLike(value.data))
      throw typeError(`${name}.data`, "a Uint8Array or an array of booleans", value.data);
    if (value.data.length !== rows * cols) {
      throw rangeError(
        `${name}.data`,
        `${count(rows * cols, "value")} (rows ${rows} × cols ${cols})`,
        lengthGiven(value.data),
        "shape_mismatch",
      );
    }
    if (value.data instanceof Uint8Array) return { name, data: value.data, rows, cols };
    get = (r, c) => value.data[r * cols + c];
  } else {
    throw typeError(name, "a boolean mask {data, rows, cols} or an array of rows", value);
  }
  const data = new Uint8Array(rows * cols);
  for (let r = 0; r < rows; ++r) {
    for (let c = 0; c < cols; ++c) {
      const v = get(r, c);
      if (typeof v !== "boolean" && typeof v !== "number")
        throw typeError(`${name}[${r}][${c}]`, "a boolean or number", v);
      data[r * cols + c] = v ? 1 : 0;
    }
  }
  return { name, data, rows, cols };
}

/**
 * A mask of ONNX Attention's attn_mask shapes as {data, rows, cols, batch,
 * heads}: a matrix [T_q, T_k] (nested rows or {data, rows, cols}), or a tensor
 * {data, shape} of rank 2 [T_q, T_k], 3 [heads, T_q, T_k] or 4 [batch, heads,
 * T_q, T_k], where batch and heads may be 1 (broadcast), T_q may be 1 (one row
 * for every query) and the last dimension may be shorter than the key count
 * (later keys masked out). `bool`: a boolean mask (Uint8Array), else additive.
 */
export function toMaskTensor(name, value, bool) {
  value = fromExternal(name, value, bool ? ["bool", "float32"] : ["float32"]);
  if (isObject(value) && !Array.isArray(value) && "shape" in value) {
    checkDataTypos(name, value, ["data", "shape"]);
    if (!isArrayLike(value.shape))
      throw typeError(`${name}.shape`, "an array of sizes", value.shape);
    const shape = Array.from(value.shape, (d, i) => checkCount(`${name}.shape[${i}]`, d));
    if (shape.length < 2 || shape.length > 4) {
      throw rangeError(
        `${name}.shape`,
        "[T_q, T_k], [heads, T_q, T_k] or [batch, heads, T_q, T_k]",
        `[${shape.join(", ")}]`,
        "shape_mismatch",
      );
    }
    const [batch, heads, queries, keys] = [1, 1, ...shape].slice(-4);
    const m = { data: value.data, rows: batch * heads * queries, cols: keys };
    return { ...(bool ? toMask(name, m) : toMatrix(name, m)), batch, heads };
  }
  return { ...(bool ? toMask(name, value) : toMatrix(name, value)), batch: 1, heads: 1 };
}
