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
import { kindOf, propertiesOf } from "./calls.js";

/**
 * A held object's state: its properties now. A getter that throws (a
 * disposed cache's size) is sent as its error, thrown by the proxy's getter.
 */
function stateOf(object) {
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

/** The kind (calls.js) of an object of the package's classes that a call handed out. */
function heldKind(object) {
  const kind = kindOf(object);
  if (kind === undefined) {
    const name = object.constructor?.name ?? "Object";
    throw new TypeError(`attnkit worker: a result (class ${name}) of no kind that calls.js lists`);
  }
  return kind;
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

/**
 * The objects the worker holds for the page, by id: an object keeps its id
 * while the page holds its proxy (until the page's "forget"). Held objects
 * that others keep alive (a trainer its model, a sampler its model, a
 * dataset its tokenizer) are counted: an object is disposed once the page
 * forgot it and no living holder keeps it.
 */
class HeldObjects {
  constructor() {
    this.objects = new Map(); // id -> object
    this.ids = new WeakMap(); // object -> id
    this.nextId = 1;
    this.keeps = new Map(); // holder -> the objects it keeps
    this.keptBy = new Map(); // object -> how many holders keep it
  }

  /** The object of `id`, or undefined. */
  get(id) {
    return this.objects.get(id);
  }

  /** True if `object` has an id (the page holds its proxy). */
  has(object) {
    return this.ids.has(object);
  }

  /** The id of `object` and whether it is new (given one now). */
  hold(object) {
    const id = this.ids.get(object);
    if (id !== undefined) return { id, added: false };
    const added = this.nextId++;
    this.ids.set(object, added);
    this.objects.set(added, object);
    return { id: added, added: true };
  }

  /** `holder` keeps `object` alive (never both ways: that would keep both forever). */
  keep(holder, object) {
    if (holder === object || this.keeps.get(object)?.has(holder)) return;
    let kept = this.keeps.get(holder);
    if (!kept) this.keeps.set(holder, (kept = new Set()));
    if (kept.has(object)) return;
    kept.add(object);
    this.keptBy.set(object, (this.keptBy.get(object) ?? 0) + 1);
  }

  /** The page dropped the proxy of `id`: its object is disposed unless a holder keeps it. */
  forget(id) {
    const object = this.objects.get(id);
    this.objects.delete(id);
    if (object === undefined) return;
    if (this.ids.get(object) === id) this.ids.delete(object);
    this.release(object);
  }

  /** Disposes `object` if nothing holds it (no proxy, no holder), then what it kept. */
  release(object) {
    if (this.ids.has(object) || (this.keptBy.get(object) ?? 0) > 0) return;
    this.keptBy.delete(object);
    const kept = this.keeps.get(object);
    this.keeps.delete(object);
    try {
      object.dispose?.();
    } catch {
      // Its module is gone: nothing to free.
    }
    for (const k of kept ?? []) {
      this.keptBy.set(k, this.keptBy.get(k) - 1);
      this.release(k);
    }
  }
}

/**
 * The worker's side of one page: the module once loaded, the objects it
 * holds, the decoding of arguments and encoding of results.
 */
class Host {
  constructor(port, createAttnkit) {
    this.port = port;
    this.createAttnkit = createAttnkit;
    this.attn = null;
    this.held = new HeldObjects();
    // The running async calls' AbortControllers, by call id.
    this.controllers = new Map();
  }

  /** Handles one message of the page: forget, load, or a call. */
  receive(message) {
    const { id, op } = message;
    if (op === "forget") return this.held.forget(message.target);
    if (op === "load") return this.load(message);
    if (op === "abort") return this.controllers.get(message.target)?.abort();
    try {
      this.call(message);
    } catch (e) {
      this.fail(message, e);
    }
  }

  /** Answers call `message` with its error. */
  fail({ id, pooled }, e) {
    this.controllers.delete(id);
    const transfer = [];
    const answer = { id, ok: false, error: errorToWire(e) };
    if (pooled) answer.spare = spare(pooled, transfer);
    this.port.post(answer, transfer);
  }

  /**
   * An async call's options (its second argument) with what stayed on the
   * page's side (worker-api.js's asyncArgs): onProgress posting progress
   * messages, a signal the page's abort message aborts.
   */
  asyncOptions({ id, flags }, args) {
    if (!flags || (!flags.progress && !flags.abortable)) return args;
    const options = { ...args[1] };
    if (flags.progress) options.onProgress = (progress) => this.port.post({ id, progress }, []);
    if (flags.abortable) {
      const controller = new AbortController();
      this.controllers.set(id, controller);
      options.signal = controller.signal;
    }
    return [args[0], options, ...args.slice(2)];
  }

  /** Loads the package with the page's options: answers with its properties (not its calls). */
  load({ id, options }) {
    this.createAttnkit(options).then(
      (a) => {
        this.attn = a;
        const props = {};
        for (const [key, value] of Object.entries(a)) {
          if (typeof value !== "function") props[key] = value;
        }
        this.port.post({ id, ok: true, value: props }, []);
      },
      (e) => this.port.post({ id, ok: false, error: errorToWire(e) }, []),
    );
  }

  /**
   * Runs a call on the module or a held object and answers with its result
   * (an async call's once it settles).
   */
  call(message) {
    const { id, target, method, args, pooled } = message;
    const self = target ? this.held.get(target) : this.attn;
    if (!self || typeof self[method] !== "function" || method === "constructor") {
      throw new TypeError(
        `attnkit worker: no method ${method} on ${target ? "that object" : "the module"}`,
      );
    }
    const inputs = new Map();
    const held = target ? [self] : [];
    const given = this.asyncOptions(message, this.fromWire(args, inputs, [], held));
    const answer = (value) => {
      const transfer = [];
      const out = { id, ok: true, value: this.toWire(value, transfer, inputs, held) };
      if (target) out.state = this.stateToWire(self, transfer, new Map());
      if (pooled) out.spare = spare(pooled, transfer);
      this.port.post(out, transfer);
    };
    const value = self[method](...given);
    if (typeof value?.then !== "function") return answer(value);
    value
      .then(answer)
      .catch((e) => this.fail(message, e))
      .finally(() => this.controllers.delete(id));
  }

  /**
   * `value` with held objects as handles; `transfer` collects result buffers;
   * a new held object keeps alive the objects in `parents` (those its call
   * was made on or given), and those in its own state.
   */
  toWire(value, transfer, inputs, parents = []) {
    if (ArrayBuffer.isView(value)) {
      const b = transferable(value);
      if (b && !transfer.includes(b)) transfer.push(b);
      const path = inputs.get(value);
      return path ? { [OUT]: path, data: value } : value;
    }
    if (value === null || typeof value !== "object") return value;
    if (isPlain(value)) {
      const out = Array.isArray(value) ? [] : {};
      for (const [k, v] of Object.entries(value)) {
        out[k] = this.toWire(v, transfer, inputs, parents);
      }
      return Object.isFrozen(value) ? { [FROZEN]: out } : out;
    }
    // An object of the package's classes: held here, proxied there.
    const handle = { kind: heldKind(value) };
    const { id, added } = this.held.hold(value);
    if (added) {
      for (const p of parents) this.held.keep(value, p);
      handle.state = this.stateToWire(value, transfer, inputs);
    }
    return { [HANDLE]: id, ...handle };
  }

  /** `object`'s state as sent; the held objects in it are kept alive by `object`. */
  stateToWire(object, transfer, inputs) {
    const s = stateOf(object);
    const out = this.toWire(s, transfer, inputs);
    for (const v of Object.values(s)) if (this.held.has(v)) this.held.keep(object, v);
    return out;
  }

  /**
   * The arguments as sent, handles resolved (and listed in `held`), stand-ins
   * for tensors, functions and symbols; `inputs` maps each typed array to its path.
   */
  fromWire(value, inputs, path, held) {
    if (ArrayBuffer.isView(value)) {
      inputs.set(value, path);
      return value;
    }
    if (value === null || typeof value !== "object") return value;
    if (typeof value[HANDLE] === "number") {
      const object = this.held.get(value[HANDLE]);
      if (object !== undefined) held.push(object);
      // Not held here (another worker's proxy): an object the checks refuse.
      return object ?? {};
    }
    if (value[TF] === true) return tfFromWire(value);
    if (value[ORT] === true) return ortFromWire(value);
    if (FN in value || SYM in value) return standIn(value);
    // A value structured clone keeps as it is (a Blob, a File).
    if (!isPlain(value)) return value;
    if (Array.isArray(value)) {
      return value.map((v, i) => this.fromWire(v, inputs, [...path, i], held));
    }
    const out = {};
    for (const [k, v] of Object.entries(value)) {
      out[k] = this.fromWire(v, inputs, [...path, k], held);
    }
    return out;
  }
}

/**
 * Serves the package over `port` ({ post(message, transfer), listen(fn) }):
 * `createAttnkit` is the entry point's loader.
 */
export function serve(port, createAttnkit) {
  const host = new Host(port, createAttnkit);
  port.listen((message) => host.receive(message));
}
