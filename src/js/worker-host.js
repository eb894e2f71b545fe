// attnkit's worker API, the worker's side: loads the package with the
// caller's options, runs each call it is sent on the module or on an object it
// holds (KVCache, Model, Trainer, TaskGenerator), and answers with the result,
// the arrays moved (transferred) back, or the error. One call at a time, in the
// order sent: the page's side queues them (worker-api.js).
import {
  FN,
  FROZEN,
  HANDLE,
  ORT,
  OUT,
  SYM,
  TF,
  THROWN,
  errorToWire,
  isPlain,
  ortFromWire,
  standIn,
  tfFromWire,
  transferable,
} from "./worker-wire.js";

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
  // Objects held for the page, by id: an object keeps its id while the page
  // holds its proxy (until the page's "forget").
  const objects = new Map();
  const ids = new WeakMap();
  let nextId = 1;
  // Held objects that others keep alive (a trainer its model, a sampler its
  // model, a dataset its tokenizer): holder -> kept objects, and how many
  // holders keep each object. An object is disposed once the page forgot it
  // and no living holder keeps it.
  const keeps = new Map();
  const keptBy = new Map();

  /** `holder` keeps `object` alive (never both ways: that would keep both forever). */
  function keep(holder, object) {
    if (holder === object || keeps.get(object)?.has(holder)) return;
    let kept = keeps.get(holder);
    if (!kept) keeps.set(holder, (kept = new Set()));
    if (kept.has(object)) return;
    kept.add(object);
    keptBy.set(object, (keptBy.get(object) ?? 0) + 1);
  }

  /** The page dropped the proxy of `id`: its object is disposed unless a holder keeps it. */
  function forget(id) {
    const object = objects.get(id);
    objects.delete(id);
    if (object === undefined) return;
    if (ids.get(object) === id) ids.delete(object);
    release(object);
  }

  /** Disposes `object` if nothing holds it (no proxy, no holder), then what it kept. */
  function release(object) {
    if (ids.has(object) || (keptBy.get(object) ?? 0) > 0) return;
    keptBy.delete(object);
    const kept = keeps.get(object);
    keeps.delete(object);
    try {
      object.dispose?.();
    } catch {
      // Its module is gone: nothing to free.
    }
    for (const k of kept ?? []) {
      keptBy.set(k, keptBy.get(k) - 1);
      release(k);
    }
  }

  /**
   * A held object's state: its properties now. A getter that throws (a
   * disposed cache's size) is sent as its error, thrown by the proxy's getter.
   */
  function state(object) {
    const out = {};
    for (const key of propertiesOf(object)) {
      try {
        const value = object[key];
        if (typeof value !== "function") out[key] = value;
      } catch (e) {
        out[key] = { [THROWN]: errorToWire(e) };
      }
    }
    return out;
  }

  /**
   * `value` with held objects as handles; `transfer` collects result buffers;
   * a new held object keeps alive the objects in `parents` (those its call
   * was made on or given), and those in its own state.
   */
  function toWire(value, transfer, inputs, parents = []) {
    if (ArrayBuffer.isView(value)) {
      const b = transferable(value);
      if (b && !transfer.includes(b)) transfer.push(b);
      const path = inputs.get(value);
      return path ? { [OUT]: path, data: value } : value;
    }
    if (value === null || typeof value !== "object") return value;
    if (isPlain(value)) {
      const out = Array.isArray(value) ? [] : {};
      for (const [k, v] of Object.entries(value)) out[k] = toWire(v, transfer, inputs, parents);
      return Object.isFrozen(value) ? { [FROZEN]: out } : out;
    }
    // An object of the package's classes: held here, proxied there.
    let id = ids.get(value);
    const handle = { kind: value.constructor?.name ?? "Object", methods: methodsOf(value) };
    if (id === undefined) {
      id = nextId++;
      ids.set(value, id);
      objects.set(id, value);
      for (const p of parents) keep(value, p);
      handle.state = stateToWire(value, transfer, inputs);
    }
    return { [HANDLE]: id, ...handle };
  }

  /** `object`'s state as sent; the held objects in it are kept alive by `object`. */
  function stateToWire(object, transfer, inputs) {
    const s = state(object);
    const out = toWire(s, transfer, inputs);
    for (const v of Object.values(s)) if (ids.has(v)) keep(object, v);
    return out;
  }

  /**
   * The arguments as sent, handles resolved (and listed in `held`), stand-ins
   * for tensors, functions and symbols; `inputs` maps each typed array to its path.
   */
  function fromWire(value, inputs, path, held) {
    if (ArrayBuffer.isView(value)) {
      inputs.set(value, path);
      return value;
    }
    if (value === null || typeof value !== "object") return value;
    if (typeof value[HANDLE] === "number") {
      const object = objects.get(value[HANDLE]);
      if (object !== undefined) held.push(object);
      // Not held here (another worker's proxy): an object the checks refuse.
      return object ?? {};
    }
    if (value[TF] === true) return tfFromWire(value);
    if (value[ORT] === true) return ortFromWire(value);
    if (FN in value || SYM in value) return standIn(value);
    if (Array.isArray(value)) return value.map((v, i) => fromWire(v, inputs, [...path, i], held));
    const out = {};
    for (const [k, v] of Object.entries(value)) out[k] = fromWire(v, inputs, [...path, k], held);
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
    const held = target ? [self] : [];
    const value = self[method](...fromWire(args, inputs, [], held));
    const transfer = [];
    const message = { id, ok: true, value: toWire(value, transfer, inputs, held) };
    if (target) message.state = stateToWire(self, transfer, new Map());
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
      forget(message.target);
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
