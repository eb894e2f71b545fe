// attnkit's worker API, the worker's side: loads the package with the
// caller's options, runs each call it is sent on the module or on an object it
// holds (KVCache, Model, Trainer, TaskGenerator), and answers with the result,
// the arrays moved (transferred) back, or the error. One call at a time, in the
// order sent: the page's side queues them (worker-api.js).
import { HANDLE, OUT, TF, errorToWire, isPlain, tfFromWire, transferable } from "./worker-wire.js";

/** The methods of an object the worker hands out: its prototype's functions but the constructor. */
function methodsOf(object) {
  const names = new Set();
  for (let p = object; p && p !== Object.prototype; p = Object.getPrototypeOf(p)) {
    for (const key of Object.getOwnPropertyNames(p)) {
      if (key === "constructor") continue;
      const d = Object.getOwnPropertyDescriptor(p, key);
      if (typeof d.value === "function") names.add(key);
    }
  }
  return [...names];
}

/** The readable properties of a held object (own values and prototype getters). */
function propertiesOf(object) {
  const names = new Set(Object.keys(object));
  for (
    let p = Object.getPrototypeOf(object);
    p && p !== Object.prototype;
    p = Object.getPrototypeOf(p)
  ) {
    for (const key of Object.getOwnPropertyNames(p)) {
      if (Object.getOwnPropertyDescriptor(p, key).get) names.add(key);
    }
  }
  return [...names];
}

/**
 * Serves the package over `port` ({ post(message, transfer), listen(fn) }):
 * `createAttnkit` is the entry point's loader.
 */
export function serve(port, createAttnkit) {
  let attn = null;
  // Objects held for the page, by id; each id names one object for its life.
  const objects = new Map();
  const ids = new WeakMap();
  let nextId = 1;

  /** A held object's state: its properties now (a disposed one has none to read). */
  function state(object) {
    const out = {};
    for (const key of propertiesOf(object)) {
      try {
        const value = object[key];
        if (typeof value !== "function") out[key] = value;
      } catch {
        // A getter of a disposed object throws: its last state stays.
      }
    }
    return out;
  }

  /** `value` with held objects as handles; `transfer` collects result buffers. */
  function toWire(value, transfer, inputs) {
    if (ArrayBuffer.isView(value)) {
      const b = transferable(value);
      if (b && !transfer.includes(b)) transfer.push(b);
      const path = inputs.get(value);
      return path ? { [OUT]: path, data: value } : value;
    }
    if (value === null || typeof value !== "object") return value;
    if (Array.isArray(value)) return value.map((v) => toWire(v, transfer, inputs));
    if (isPlain(value)) {
      const out = {};
      for (const [k, v] of Object.entries(value)) out[k] = toWire(v, transfer, inputs);
      return out;
    }
    // An object of the package's classes: held here, proxied there.
    let id = ids.get(value);
    if (id === undefined) {
      id = nextId++;
      ids.set(value, id);
      objects.set(id, value);
      return {
        [HANDLE]: id,
        kind: value.constructor?.name ?? "Object",
        methods: methodsOf(value),
        state: toWire(state(value), transfer, inputs),
      };
    }
    return { [HANDLE]: id };
  }

  /** The arguments as sent, handles resolved; `inputs` maps each typed array to its path. */
  function fromWire(value, inputs, path) {
    if (ArrayBuffer.isView(value)) {
      inputs.set(value, path);
      return value;
    }
    if (value === null || typeof value !== "object") return value;
    if (typeof value[HANDLE] === "number") {
      const held = objects.get(value[HANDLE]);
      // A handle the page forgot cannot be sent: it was collected there.
      return held ?? {};
    }
    if (value[TF] === true) return tfFromWire(value);
    if (Array.isArray(value)) return value.map((v, i) => fromWire(v, inputs, [...path, i]));
    const out = {};
    for (const [k, v] of Object.entries(value)) out[k] = fromWire(v, inputs, [...path, k]);
    return out;
  }

  function call({ id, target, method, args, pooled }) {
    const self = target ? objects.get(target) : attn;
    if (!self || typeof self[method] !== "function" || method === "constructor") {
      throw new TypeError(
        `attnkit worker: no method ${method} on ${target ? "that object" : "the module"}`,
      );
    }
    const inputs = new Map();
    const value = self[method](...fromWire(args, inputs, []));
    const transfer = [];
    const message = { id, ok: true, value: toWire(value, transfer, inputs) };
    if (target) message.state = toWire(state(self), transfer, new Map());
    if (pooled) message.spare = spare(pooled, transfer);
    port.post(message, transfer);
  }

  /**
   * The client's reused buffers that the call's copied inputs came in, sent
   * back with its answer (moved, not copied), but those the result itself
   * moves (an options.out written in place) or that no longer hold memory.
   */
  function spare(pooled, transfer) {
    const back = [];
    for (const b of pooled) {
      if (b.byteLength > 0 && !transfer.includes(b)) {
        back.push(b);
        transfer.push(b);
      }
    }
    return back;
  }

  port.listen((message) => {
    const { id, op } = message;
    if (op === "forget") {
      objects.delete(message.target);
      return;
    }
    if (op === "load") {
      createAttnkit(message.options).then(
        (a) => {
          attn = a;
          const props = {};
          for (const [key, value] of Object.entries(a)) {
            if (typeof value !== "function") props[key] = value;
          }
          const methods = Object.keys(a).filter((key) => typeof a[key] === "function");
          port.post({ id, ok: true, value: { props, methods } }, []);
        },
        (e) => port.post({ id, ok: false, error: errorToWire(e) }, []),
      );
      return;
    }
    try {
      call(message);
    } catch (e) {
      const transfer = [];
      const answer = { id, ok: false, error: errorToWire(e) };
      if (message.pooled) answer.spare = spare(message.pooled, transfer);
      port.post(answer, transfer);
    }
  });
}
