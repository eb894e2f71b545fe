// attnkit: the tensors of other libraries as inputs. An onnxruntime Tensor
// (onnxruntime-web, -node: onnxruntime-common's class) and a tfjs Tensor become
// { data, shape } over their own typed array, so that the only copy is the one
// into wasm memory. Results need nothing: every result has `data` (a
// Float32Array) and `shape`, which `new ort.Tensor("float32", r.data, r.shape)`
// and `tf.tensor(r.data, r.shape)` take as they are.
import { AttnkitError, typeError } from "./errors.js";

/** True for an onnxruntime Tensor: `dims`, `type` and `data` (a getter on its class). */
export function isOrtTensor(value) {
  return (
    value !== null &&
    typeof value === "object" &&
    Array.isArray(value.dims) &&
    typeof value.type === "string" &&
    "data" in value
  );
}

/** True for a tfjs Tensor: `shape`, `dtype` and the methods dataSync() and data(). */
export function isTfTensor(value) {
  return (
    value !== null &&
    typeof value === "object" &&
    Array.isArray(value.shape) &&
    typeof value.dtype === "string" &&
    typeof value.dataSync === "function"
  );
}

/**
 * `value` as { data, shape } if it is an onnxruntime or tfjs tensor, else
 * `value` itself. ort: its `data` (throws naming `name` if the data lives on a
 * GPU). tfjs: dataSync(), which on the cpu backend returns the tensor's own
 * array and on GPU backends downloads it (blocking; the worker API reads
 * `await t.data()` instead). `types`: the element types taken.
 */
export function fromExternal(name, value, types = ["float32"]) {
  if (isOrtTensor(value)) {
    checkElementType(name, "type", value.type, types);
    if (value.location !== undefined && value.location !== "cpu") {
      throw new AttnkitError(
        `${name}: expected an onnxruntime Tensor with its data on the CPU, got one on "${value.location}" (call getData() first)`,
        { parameter: name },
      );
    }
    return { data: value.data, shape: value.dims };
  }
  if (isTfTensor(value)) {
    if (value.isDisposed) {
      throw new AttnkitError(`${name}: expected a live tfjs Tensor, got one that was disposed`, {
        code: "disposed",
        parameter: name,
      });
    }
    checkElementType(name, "dtype", value.dtype, types);
    return { data: value.dataSync(), shape: value.shape };
  }
  return value;
}

/** An AttnkitTypeError naming `name.field` unless `given` is one of `types`. */
function checkElementType(name, field, given, types) {
  if (!types.includes(given)) {
    throw typeError(`${name}.${field}`, `"${types.join('" or "')}"`, given);
  }
}
