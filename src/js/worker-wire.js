// attnkit's worker API: what crosses between the page (or Node's main thread)
// and the worker that runs the package. Values go by structured clone; three
// kinds of value are encoded on the way:
//   a handle  { [HANDLE]: id, kind?, state? }  an object held in the worker
//             (KVCache, Model, Trainer...: a kind of calls.js's HELD_OBJECTS),
//             proxied outside with the calls the table lists for its kind;
//   a tfjs tensor  { [TF]: true, dtype, shape, data }  its data read with data();
//   an ort tensor  { [ORT]: true, type, dims, location, data }  data read on the
//             CPU only (the worker's checks name a tensor on a GPU);
//   a function or symbol  { [FN]: name } / { [SYM]: description }  a stand-in
//             that the worker's checks refuse as they refuse the original;
//   frozen    { [FROZEN]: value }  an object or array frozen on the way out;
//   a throw   { [THROWN]: error }  a held object's property whose getter threw;
//   an out    { [OUT]: path, data }  a result array the caller passed in (an
//             options.out), written back into the caller's array;
//   an error  { name, message, code, parameter }  rebuilt as the same class.
import { AttnkitError, AttnkitTypeError } from "./errors.js";

export const HANDLE = "__attnkitHandle";
export const OUT = "__attnkitOut";
/** An onnxruntime tensor read on the caller's side: { [ORT]: true, type, dims, location, data }. */
export const ORT = "__attnkitOrt";
export const FN = "__attnkitFunction";
export const SYM = "__attnkitSymbol";
export const FROZEN = "__attnkitFrozen";
export const THROWN = "__attnkitThrown";
/** A tfjs tensor read on the caller's side: { [TF]: true, dtype, shape, data, disposed }. */
export const TF = "__attnkitTf";

/** A tfjs tensor as the worker's checks see one: its dtype, shape and data, or disposed. */
export function tfFromWire({ dtype, shape, data, disposed }) {
  return { dtype, shape, isDisposed: disposed, dataSync: () => data };
}

/**
 * An onnxruntime tensor as the worker's checks see one (interop.js's
 * isOrtTensor): its type, dims and location, and its data if on the CPU.
 */
export function ortFromWire({ type, dims, location, data }) {
  return { type, dims, location, data };
}

/** A function's or symbol's stand-in in the worker: the same kind of value, never called. */
export function standIn(wire) {
  if (SYM in wire) return Symbol(wire[SYM]);
  const fn = function () {};
  Object.defineProperty(fn, "name", { value: wire[FN] });
  return fn;
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

/** The brand of the worker API's proxies (every worker's, every bundle's). */
export const PROXY = Symbol.for("attnkit.workerProxy");
