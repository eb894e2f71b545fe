// attnkit's worker API: what crosses between the page (or Node's main thread)
// and the worker that runs the package. Values go by structured clone (or, in
// the shared channel below, as JSON in shared memory); these kinds of value
// are encoded on the way:
//   a handle  { [HANDLE]: id, kind?, methods?, state? }  an object held in the
//             worker (KVCache, Model, Trainer, TaskGenerator), proxied outside;
//   a tfjs tensor  { [TF]: true, dtype, shape, data }  its data read with data();
//   an out    { [OUT]: path, data }  a result array the caller passed in (an
//             options.out), written back into the caller's array;
//   an error  { name, message, code, parameter }  rebuilt as the same class.
import { AttnkitError, AttnkitTypeError } from "./errors.js";

export const HANDLE = "__attnkitHandle";
export const OUT = "__attnkitOut";
/** A tfjs tensor read on the caller's side: { [TF]: true, dtype, shape, data, disposed }. */
export const TF = "__attnkitTf";

/** A tfjs tensor as the worker's checks see one: its dtype, shape and data, or disposed. */
export function tfFromWire({ dtype, shape, data, disposed }) {
  return { dtype, shape, isDisposed: disposed, dataSync: () => data };
}

/** True for a plain object or array (what is walked for handles and arrays). */
export function isPlain(value) {
  if (value === null || typeof value !== "object") return false;
  if (Array.isArray(value)) return true;
  const proto = Object.getPrototypeOf(value);
  return proto === Object.prototype || proto === null;
}

/** The ArrayBuffer behind a typed array, if it can be transferred (not shared, not empty). */
export function transferable(view) {
  const b = view.buffer;
  return b instanceof ArrayBuffer && b.byteLength > 0 ? b : null;
}

/** `value` as it crosses: class and message kept, with code and parameter. */
export function errorToWire(e) {
  if (e instanceof AttnkitError) {
    const type = e instanceof TypeError ? "AttnkitTypeError" : "AttnkitError";
    return { type, name: e.name, message: e.message, code: e.code, parameter: e.parameter };
  }
  return { type: "Error", name: e?.name ?? "Error", message: String(e?.message ?? e) };
}

/** The error `wire` describes, as an instance of this side's classes. */
export function errorFromWire(wire) {
  let e;
  if (wire.type === "AttnkitTypeError") {
    e = new AttnkitTypeError(wire.message, { parameter: wire.parameter });
  } else if (wire.type === "AttnkitError") {
    e = new AttnkitError(wire.message, { code: wire.code, parameter: wire.parameter });
  } else {
    const Class = { TypeError, RangeError }[wire.name] ?? Error;
    e = new Class(wire.message);
  }
  if (e.name !== wire.name) e.name = wire.name;
  return e;
}

/** The AbortError-like error of a call cancelled through `parameter`. */
export function abortError(parameter, message, cause) {
  const e = new AttnkitError(`${parameter}: ${message}`, { code: "aborted", parameter });
  e.name = "AbortError";
  if (cause !== undefined) e.cause = cause;
  return e;
}

// The shared channel (a SharedArrayBuffer path for the module's calls where
// the platform has SharedArrayBuffer and Atomics.waitAsync: Node, and pages
// that are cross-origin isolated). Two shared buffers cross once, at load:
//   ctl    Int32Array(CTL_WORDS): the words below, woken through Atomics;
//   block  the data: a request's arrays then its envelope (JSON of the
//          arguments, each array a slot { [SLOT]: [type, byteOffset, length] }),
//          and after them the answer's arrays and envelope.
// A block too small for a request is replaced by a larger one, sent with that
// request by message; an answer that does not fit comes by message.
export const SLOT = "__attnkitSlot";
// A number JSON does not keep (NaN, ±Infinity, -0), and undefined.
const NUM = "__attnkitNum";
const UNDEF = "__attnkitUndef";
/** ctl's words: the caller's wake count, request id, its envelope's place, the answer's. */
export const CTL = {
  WAKE: 0, // bumped by the caller for each request and each message it posts
  MAIL: 1, // the messages the caller has posted since the channel opened
  REQ: 2, // the id of the latest request made through the block
  REQ_AT: 3, // the request envelope's byte offset and length in chars
  REQ_CHARS: 4,
  ANS_FROM: 5, // where the answer may start (the end of the request)
  ANS: 6, // the id of the latest answer, bumped by the worker
  ANS_KIND: 7, // 0: in the block, 1: by message
  ANS_AT: 8,
  ANS_CHARS: 9,
  ANS_NEED: 10, // the bytes an answer by message would have needed in the block
};
export const CTL_WORDS = 16;
export const ANSWER_IN_BLOCK = 0;
export const ANSWER_BY_MESSAGE = 1;
// Typed arrays a slot can hold (BigInt arrays and subclasses such as Node's Buffer go by message).
const ARRAY_TYPES = [
  Float32Array,
  Float64Array,
  Int8Array,
  Uint8Array,
  Uint8ClampedArray,
  Int16Array,
  Uint16Array,
  Int32Array,
  Uint32Array,
];
const align16 = (n) => (n + 15) & ~15;

/** True where the shared channel can run: SharedArrayBuffer usable and Atomics.waitAsync. */
export function sharedUsable() {
  return (
    typeof SharedArrayBuffer === "function" &&
    globalThis.crossOriginIsolated !== false &&
    typeof Atomics === "object" &&
    typeof Atomics.waitAsync === "function"
  );
}

/**
 * Writes `value` into `block` from byte `from`: its typed arrays copied in as
 * slots, then the JSON envelope (UTF-16 code units). Returns { at, chars, end }
 * (the envelope's offset and length, the first byte after it), { need } with
 * the bytes it needs when the block is too small, or null when `value` holds
 * something JSON cannot carry as structured clone would (a function, a class
 * instance, a BigInt...).
 */
export function writeShared(value, block, from) {
  const size = block ? block.byteLength : 0;
  let at = from;
  let fits = true;
  const slot = (view) => {
    const type = ARRAY_TYPES.indexOf(view.constructor);
    if (type < 0) throw NOT_SHAREABLE;
    const start = align16(at);
    at = start + view.byteLength;
    if (at > size) fits = false;
    else if (view.length) new view.constructor(block, start, view.length).set(view);
    return { [SLOT]: [type, start, view.length] };
  };
  let envelope;
  try {
    envelope = JSON.stringify(toJson(value, slot));
  } catch (e) {
    if (e === NOT_SHAREABLE) return null;
    throw e;
  }
  const start = align16(at);
  const end = start + envelope.length * 2;
  if (!fits || end > size) return { need: end };
  const units = new Uint16Array(block, start, envelope.length);
  for (let i = 0; i < envelope.length; ++i) units[i] = envelope.charCodeAt(i);
  return { at: start, chars: envelope.length, end };
}

/** The value written by writeShared: its arrays as views of `block` (copy what is kept). */
export function readShared(block, at, chars) {
  const units = new Uint16Array(block, at, chars);
  let text = "";
  for (let i = 0; i < chars; i += 8192) {
    text += String.fromCharCode.apply(null, units.subarray(i, Math.min(chars, i + 8192)));
  }
  return fromJson(JSON.parse(text), block);
}

const NOT_SHAREABLE = new Error("not shareable");

/** `value` as JSON keeps it: arrays through `slot`, odd numbers and undefined tagged. */
function toJson(value, slot) {
  switch (typeof value) {
    case "number":
      return Number.isFinite(value) && !Object.is(value, -0) ? value : { [NUM]: String(value) };
    case "string":
    case "boolean":
      return value;
    case "undefined":
      return { [UNDEF]: 1 };
    case "object":
      break;
    default:
      throw NOT_SHAREABLE; // bigint, symbol, function
  }
  if (value === null) return null;
  if (ArrayBuffer.isView(value)) return slot(value);
  if (!isPlain(value)) throw NOT_SHAREABLE;
  if (Array.isArray(value)) {
    const out = new Array(value.length);
    for (let i = 0; i < value.length; ++i) {
      if (!(i in value)) throw NOT_SHAREABLE; // a hole
      out[i] = toJson(value[i], slot);
    }
    return out;
  }
  const out = {};
  for (const key of Object.keys(value)) out[key] = toJson(value[key], slot);
  return out;
}

/** The value toJson made, with slots as views of `block`. */
function fromJson(value, block) {
  if (value === null || typeof value !== "object") return value;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; ++i) value[i] = fromJson(value[i], block);
    return value;
  }
  const s = value[SLOT];
  if (s) {
    const Type = ARRAY_TYPES[s[0]];
    // An empty array as structured clone gives one (no buffer behind it).
    return s[2] === 0 ? new Type(0) : new Type(block, s[1], s[2]);
  }
  if (value[NUM] !== undefined) return Number(value[NUM]);
  if (value[UNDEF] !== undefined) return undefined;
  for (const key of Object.keys(value)) value[key] = fromJson(value[key], block);
  return value;
}
