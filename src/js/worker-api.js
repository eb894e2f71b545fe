// attnkit's worker API, the caller's side: createAttnkitWorker() starts a
// worker that loads the package (worker-host.js) and returns an object with
// the synchronous API's calls, each returning a Promise. Calls run one at a
// time in the order made, from one queue per worker; a call waiting in the
// queue can be cancelled (an AbortSignal); a running one only by terminate().
// Objects the worker holds (KV caches, models, trainers, task generators) come
// back as proxies whose calls go through the same queue. The module's calls and
// those of each kind of held object are calls.js's.
import { AttnkitError, typeError } from "./errors.js";
import { checkKeys, isObject } from "./convert.js";
import { isOrtTensor, isTfTensor } from "./interop.js";
import { LOAD_OPTION_KEYS } from "./load-options.js";
import { HELD_OBJECTS, MODULE_CALLS } from "./calls.js";
import {
  FN,
  FROZEN,
  HANDLE,
  ORT,
  OUT,
  PROXY,
  SYM,
  TF,
  THROWN,
  abortError,
  errorFromWire,
  isPlain,
  transferable,
} from "./worker-wire.js";

// Arrays smaller than this go by structured clone, which is as fast for them.
const POOL_MIN_BYTES = 4096;
// The most bytes of buffers a client keeps for reuse.
const POOL_KEEP_BYTES = 64 << 20;

/**
 * The buffers a worker client copies inputs into, reused from call to call:
 * a copied input then costs one copy and no allocation, where structured
 * clone copies it twice (into the message, out of it) into a new
 * ArrayBuffer, whose allocation (and, past glibc's mmap threshold, page
 * faults and GC finalisation) is much of an async call's added cost. Buffers
 * are sized in powers of two; each moves to the worker with its call and
 * comes back with the answer.
 */
class BufferPool {
  constructor() {
    this.free = new Map(); // byteLength -> [ArrayBuffer]
    this.bytes = 0;
  }

  /** A buffer of at least `bytes` bytes (taken from the pool when one is there). */
  take(bytes) {
    let size = POOL_MIN_BYTES;
    while (size < bytes) size *= 2;
    const list = this.free.get(size);
    if (list?.length) {
      this.bytes -= size;
      return list.pop();
    }
    return new ArrayBuffer(size);
  }

  /** Keeps `buffer` for a later call (not past POOL_KEEP_BYTES). */
  give(buffer) {
    const size = buffer.byteLength;
    if (size < POOL_MIN_BYTES || this.bytes + size > POOL_KEEP_BYTES) return;
    let list = this.free.get(size);
    if (!list) this.free.set(size, (list = []));
    list.push(buffer);
    this.bytes += size;
  }
}
const WORKER_KEYS = ["transfer", "workerUrl"];
const CALL_KEYS = ["signal", "transfer"];

/** The worker options, checked: { load (what createAttnkit takes), transfer, workerUrl }. */
function checkWorkerOptions(options) {
  if (options === undefined) return { load: undefined, transfer: false, workerUrl: undefined };
  if (!isObject(options) || Array.isArray(options)) {
    throw typeError("options", "an object of load and worker options", options);
  }
  checkKeys("options", options, [...LOAD_OPTION_KEYS, ...WORKER_KEYS], "option");
  const { transfer = false, workerUrl, ...load } = options;
  if (typeof transfer !== "boolean") throw typeError("options.transfer", "a boolean", transfer);
  if (workerUrl !== undefined && typeof workerUrl !== "string" && !(workerUrl instanceof URL)) {
    throw typeError("options.workerUrl", "a string or URL", workerUrl);
  }
  return { load, transfer, workerUrl };
}

/** The options of `with()`: { signal?, transfer? }. */
function checkCallOptions(options) {
  if (!isObject(options) || Array.isArray(options)) {
    throw typeError("options", "an object {signal?, transfer?}", options);
  }
  checkKeys("options", options, CALL_KEYS, "option");
  const { signal, transfer } = options;
  if (signal !== undefined && !isSignal(signal)) {
    throw typeError("options.signal", "an AbortSignal", signal);
  }
  if (transfer !== undefined && typeof transfer !== "boolean") {
    throw typeError("options.transfer", "a boolean", transfer);
  }
  return options;
}

/** A held object's property whose getter threw in the worker: its proxy's getter throws the same. */
class Thrown {
  constructor(error) {
    this.error = error;
  }
}

/**
 * The invalid_argument AttnkitError of arguments that cannot be sent to a
 * worker (structured clone refused one: a WeakMap, a DOM node, a class
 * instance holding a function), naming the first such argument by its path.
 */
function uncloneable(args, cause) {
  const find = (value, path) => {
    if (ArrayBuffer.isView(value) || value === null || typeof value !== "object") return null;
    if (isPlain(value)) {
      for (const [k, v] of Object.entries(value)) {
        const at = find(v, Array.isArray(value) ? `${path}[${k}]` : `${path}.${k}`);
        if (at) return at;
      }
      return null;
    }
    try {
      structuredClone(value);
      return null;
    } catch {
      return path;
    }
  };
  const list = Array.isArray(args) ? args : [args];
  let parameter = "arguments";
  for (let i = 0; i < list.length; ++i) {
    const at = find(list[i], `arguments[${i}]`);
    if (at) {
      parameter = at;
      break;
    }
  }
  const e = new AttnkitError(
    `${parameter}: expected a value a worker can receive (numbers, strings, arrays, plain objects), got one structured clone refuses: ${cause.message}`,
    { parameter },
  );
  e.cause = cause;
  return e;
}

/** Whether `signal` is an AbortSignal (by its members: any realm's). */
function isSignal(signal) {
  return (
    isObject(signal) &&
    typeof signal.aborted === "boolean" &&
    typeof signal.addEventListener === "function" &&
    typeof signal.removeEventListener === "function"
  );
}

/**
 * An async call's arguments as sent (calls.js's `async`): its options'
 * onProgress and signal stay here, the worker told of them by flags
 * (`progress`, `abortable`); values of other types go as they are, for the
 * worker's checks to name.
 */
function asyncArgs(args) {
  // A URL cannot be cloned: its string goes.
  if (typeof URL === "function" && args[0] instanceof URL) args = [args[0].href, ...args.slice(1)];
  const options = args[1];
  if (!isObject(options) || Array.isArray(options) || !isPlain(options)) return { args };
  const { onProgress, signal, ...rest } = options;
  const local = {};
  if (typeof onProgress === "function") local.onProgress = onProgress;
  else if (onProgress !== undefined) rest.onProgress = onProgress;
  if (isSignal(signal)) local.signal = signal;
  else if (signal !== undefined) rest.signal = signal;
  const flags = { progress: "onProgress" in local, abortable: "signal" in local };
  return { args: [args[0], rest, ...args.slice(2)], local, flags };
}

/** An AbortSignal's reason as the call's rejection: an AbortError-like AttnkitError. */
function aborted(signal) {
  return abortError(
    "options.signal",
    "expected the call to run, got it cancelled before it started",
    signal.reason,
  );
}

/** `value` with each typed array of POOL_MIN_BYTES or more copied into a buffer of `pool`. */
function copyPooled(value, job, pool) {
  if (ArrayBuffer.isView(value)) {
    if (value.byteLength < POOL_MIN_BYTES || value instanceof DataView) return value;
    const buffer = pool.take(value.byteLength);
    const copy = new value.constructor(buffer, 0, value.length);
    copy.set(value);
    job.pooled.push(buffer);
    job.transfer.push(buffer);
    return copy;
  }
  if (value === null || typeof value !== "object" || !isPlain(value)) return value;
  if (Array.isArray(value)) return value.map((v) => copyPooled(v, job, pool));
  const out = {};
  for (const [k, v] of Object.entries(value)) out[k] = copyPooled(v, job, pool);
  return out;
}

/**
 * A tensor of another library as it is sent (worker-wire.js), or undefined
 * for any other value: an ort tensor with its element type and, on the CPU,
 * its data (`encodeData` encodes it); a tfjs tensor with its data() started,
 * awaited before the job is sent (job.pending, job.fill).
 */
function encodeTensor(value, job, encodeData) {
  if (isOrtTensor(value)) {
    // Its data is read only on the CPU (a GPU tensor's getter throws); the
    // worker's call checks the type and location as the synchronous one does.
    const { type, dims, location } = value;
    const onCpu = location === undefined || location === "cpu";
    const data = onCpu ? encodeData(value.data) : null;
    return { [ORT]: true, type, dims: dims.slice(), location, data };
  }
  if (isTfTensor(value)) {
    const { dtype, isDisposed } = value;
    const out = { [TF]: true, dtype, shape: value.shape.slice(), data: null, disposed: isDisposed };
    if (isDisposed) return out; // the worker names it
    job.pending.push(value.data());
    job.fill.push((data) => (out.data = data));
    return out;
  }
  return undefined;
}

/**
 * The proxies of the objects the worker holds: one per handle id while the
 * caller keeps it; a dropped proxy's object is forgotten by the worker.
 */
class HeldProxies {
  constructor(client) {
    this.client = client;
    this.proxies = new Map(); // handle id -> WeakRef of its proxy
    this.ids = new WeakMap(); // proxy -> handle id
    this.states = new WeakMap(); // proxy -> its latest state
    this.registry =
      typeof FinalizationRegistry === "function"
        ? new FinalizationRegistry((id) => this.dropped(id))
        : null;
  }

  /** The proxy of handle `id` was collected: the worker forgets its object. */
  dropped(id) {
    // A newer proxy of the same object (sent again since) keeps it.
    if (this.client.ended || this.proxies.get(id)?.deref()) return;
    this.proxies.delete(id);
    this.client.worker.post({ op: "forget", target: id }, []);
  }

  /** The handle id of `proxy`, or undefined for any other value. */
  idOf(proxy) {
    return this.ids.get(proxy);
  }

  /** Records `state` (decoded) as the latest of `proxy`. */
  setState(proxy, state) {
    this.states.set(proxy, state);
  }

  /** The proxy of a held object: its properties from its latest state, its calls queued. */
  proxyFor(handle, job) {
    const id = handle[HANDLE];
    const known = this.proxies.get(id)?.deref();
    if (known) return known;
    const proxy = this.makeProxy(id, Object.keys(HELD_OBJECTS[handle.kind]?.calls ?? {}));
    const state = handle.state ?? {};
    this.states.set(proxy, this.client.decode(state, job));
    for (const key of Object.keys(state)) {
      const get = () => {
        const value = this.states.get(proxy)[key];
        if (value instanceof Thrown) throw errorFromWire(value.error);
        return value;
      };
      Object.defineProperty(proxy, key, { get, enumerable: true });
    }
    Object.defineProperty(proxy, Symbol.toStringTag, { value: `Async${handle.kind}` });
    this.proxies.set(id, new WeakRef(proxy));
    this.ids.set(proxy, id);
    this.registry?.register(proxy, id);
    return proxy;
  }

  /** An object with `methods` queued on target `id`, and with(options) for per-call options. */
  makeProxy(id, methods) {
    const client = this.client;
    const proxy = {};
    Object.defineProperty(proxy, PROXY, { value: true });
    for (const method of methods) {
      proxy[method] = (...args) => client.enqueue("call", id, method, args, undefined, proxy);
    }
    // The same calls with call options: a view whose calls pass them.
    proxy.with = (options) => {
      const o = checkCallOptions(options);
      const view = Object.create(proxy);
      const calls = {
        with: { value: (more) => proxy.with({ ...o, ...checkCallOptions(more) }) },
      };
      for (const method of methods) {
        if (id === 0 && method === "dispose") continue; // the module's own, which ends the worker
        calls[method] = { value: (...args) => client.enqueue("call", id, method, args, o, proxy) };
      }
      return Object.defineProperties(view, calls);
    };
    return proxy;
  }
}

/**
 * One worker's caller side: the queue of its calls (one runs at a time, in
 * the order made), the buffers their copied inputs go in, the encoding of
 * arguments and decoding of results, and the proxies of the objects it holds.
 * `worker`: the platform's { post, listen, terminate, busy }.
 */
class WorkerClient {
  constructor(worker, transferByDefault) {
    this.worker = worker;
    this.transferByDefault = transferByDefault;
    this.nextId = 1;
    this.running = null; // the job the worker runs
    this.queue = []; // jobs not sent yet, in order
    this.ended = null; // the error every later call rejects with
    this.pool = new BufferPool();
    this.held = new HeldProxies(this);
    worker.listen(
      (message) => this.receive(message),
      (error) => this.end(error),
    );
  }

  /** Rejects every job with `error` and ends the worker. */
  end(error) {
    if (this.ended) return;
    this.ended = error;
    const jobs = this.running ? [this.running, ...this.queue] : [...this.queue];
    this.running = null;
    this.queue.length = 0;
    for (const job of jobs) settle(job, () => job.reject(error));
    this.worker.terminate();
  }

  /** The worker's answer to the running job. */
  receive(message) {
    const job = this.running;
    if (!job || message.id !== job.id) return;
    if (message.progress) {
      job.local?.onProgress?.(message.progress);
      return;
    }
    this.running = null;
    // The buffers the call's copied inputs went in, back for the next call.
    if (message.spare) for (const b of message.spare) this.pool.give(b);
    settle(job, () => {
      if (!message.ok) return job.reject(errorFromWire(message.error));
      if (message.state && job.self) this.held.setState(job.self, this.decode(message.state, job));
      job.resolve(this.decode(message.value, job));
    });
    this.pump();
  }

  /** Tells the platform whether calls are running or waiting. */
  markBusy() {
    this.worker.busy(this.running !== null || this.queue.length > 0);
  }

  /** The next queued job, sent once the worker is free. */
  pump() {
    this.markBusy();
    if (this.running || this.ended || this.queue.length === 0) return;
    const job = this.queue.shift();
    this.running = job;
    const failed = (e) => {
      this.running = null;
      settle(job, () => job.reject(e));
      this.pump();
    };
    if (job.pending.length === 0) {
      try {
        this.send(job);
      } catch (e) {
        failed(e);
      }
      return;
    }
    Promise.all(job.pending)
      .then((values) => {
        if (this.running !== job) return;
        job.pending.forEach((p, i) => job.fill[i](values[i]));
        this.send(job);
      })
      .catch((e) => {
        if (this.running === job) failed(e);
      });
  }

  /**
   * Posts the job. Its pooled inputs are copied now, as it leaves the queue:
   * the queue holds no copies, and the buffers the last call gave back are
   * there to reuse.
   */
  send(job) {
    const message = { id: job.id, op: job.op, target: job.target, method: job.method };
    if (job.flags) message.flags = job.flags;
    // An async call's own signal, aborted while it runs, stops it in the worker.
    const signal = job.local?.signal;
    if (signal) {
      job.onRunAbort = () => this.worker.post({ op: "abort", target: job.id }, []);
      signal.addEventListener("abort", job.onRunAbort, { once: true });
    }
    const args = job.pool ? copyPooled(job.args, job, this.pool) : job.args;
    message[job.op === "load" ? "options" : "args"] = args;
    if (job.pooled.length) message.pooled = job.pooled;
    try {
      try {
        this.worker.post(message, job.transfer);
      } catch (e) {
        // A buffer that cannot move (e.g. a view of wasm memory): copied instead.
        if (job.transfer.length === 0 || e?.name === "DataCloneError") throw e;
        this.worker.post(message, []);
      }
    } catch (e) {
      for (const b of job.pooled) this.pool.give(b);
      if (e?.name !== "DataCloneError") throw e;
      throw uncloneable(job.originals, e);
    }
  }

  /**
   * Queues a call of `method` on the module (target 0) or a held object. The
   * arguments are walked now (proxies as handles, ort tensors' data, tfjs
   * tensors' data() started, awaited before sending); their arrays are read
   * when the call is sent (copied or moved then).
   */
  enqueue(op, target, method, args, callOptions, self) {
    return new Promise((resolve, reject) => {
      if (this.ended) return reject(this.ended);
      const signal = callOptions?.signal;
      if (signal?.aborted) return reject(aborted(signal));
      const transfer = callOptions?.transfer ?? this.transferByDefault;
      const job = { id: this.nextId++, op, target, method, self, resolve, reject, signal };
      job.pending = [];
      job.fill = [];
      job.originals = args;
      job.transfer = [];
      // Copied inputs of a call that keeps none go in reused buffers (when sent).
      job.pooled = [];
      job.pool = !transfer && target === 0 && MODULE_CALLS[method]?.pooled === true;
      if (target === 0 && MODULE_CALLS[method]?.async === true) {
        const sent = asyncArgs(args);
        if (sent.local?.signal?.aborted) return reject(aborted(sent.local.signal));
        Object.assign(job, { local: sent.local, flags: sent.flags });
        args = sent.args;
      }
      try {
        job.args = this.encode(args, job, transfer);
      } catch (e) {
        return reject(e);
      }
      if (signal) {
        job.onAbort = () => this.cancel(job);
        signal.addEventListener("abort", job.onAbort, { once: true });
      }
      const own = job.local?.signal;
      if (own && own !== signal) {
        job.onOwnAbort = () => this.cancel(job, own);
        own.addEventListener("abort", job.onOwnAbort, { once: true });
      }
      this.queue.push(job);
      this.pump();
    });
  }

  /** Takes `job` out of the queue, `signal` aborted (a running job's result still comes). */
  cancel(job, signal = job.signal) {
    const at = this.queue.indexOf(job);
    if (at < 0) return;
    this.queue.splice(at, 1);
    settle(job, () => job.reject(aborted(signal)));
    this.markBusy();
  }

  /**
   * The arguments as they are sent (worker-wire.js): proxies as handles, ort
   * and tfjs tensors with their element type (the worker's call checks it),
   * functions and symbols as stand-ins; with `transfer`, the typed arrays'
   * buffers are listed to move (never a tfjs tensor's: tfjs keeps using it).
   */
  encode(value, job, transfer) {
    if (ArrayBuffer.isView(value)) {
      // A detached array cannot be cloned: an empty one goes, which the worker names.
      if (value.byteLength === 0) return new value.constructor(0);
      const b = transfer && transferable(value);
      if (b && !job.transfer.includes(b)) job.transfer.push(b);
      return value;
    }
    // Functions and symbols cannot be cloned: stand-ins that the worker's checks name.
    if (typeof value === "function") return { [FN]: value.name };
    if (typeof value === "symbol") return { [SYM]: value.description };
    if (value === null || typeof value !== "object") return value;
    const id = this.held.idOf(value);
    if (id !== undefined) return { [HANDLE]: id };
    // Another worker's proxy (or this module's): an object not held here.
    if (value[PROXY] === true) return { [HANDLE]: 0 };
    const tensor = encodeTensor(value, job, (data) => this.encode(data, job, transfer));
    if (tensor !== undefined) return tensor;
    if (Array.isArray(value)) return value.map((v) => this.encode(v, job, transfer));
    if (!isPlain(value)) return value; // sent as structured clone takes it
    const out = {};
    for (const [k, v] of Object.entries(value)) out[k] = this.encode(v, job, transfer);
    return out;
  }

  /** A result as the caller gets it: handles as proxies, outs in the caller's arrays. */
  decode(value, job) {
    if (value === null || typeof value !== "object" || ArrayBuffer.isView(value)) return value;
    if (Array.isArray(value)) return value.map((v) => this.decode(v, job));
    if (FROZEN in value) return Object.freeze(this.decode(value[FROZEN], job));
    if (THROWN in value) return new Thrown(value[THROWN]);
    if (typeof value[HANDLE] === "number") return this.held.proxyFor(value, job);
    if (Array.isArray(value[OUT])) return decodeOut(value, job.originals);
    const out = {};
    for (const [k, v] of Object.entries(value)) out[k] = this.decode(v, job);
    return out;
  }

  /** Loads the package in the worker with `load`: what the module holds but its calls. */
  async load(load, workerUrl) {
    try {
      return await this.enqueue("load", 0, "", load, undefined, null);
    } catch (e) {
      this.end(e);
      // The worker script itself did not run: a load failure, as createAttnkit's.
      if (e.code !== "aborted") throw e;
      const parameter = workerUrl === undefined ? "options" : "options.workerUrl";
      throw new AttnkitError(
        `${parameter}: expected attnkit/worker's worker script to load, got: ${e.message}`,
        { code: "load_failed", parameter },
      );
    }
  }

  /** The module's proxy: its calls, its properties `props`, dispose() and terminate(). */
  moduleProxy(props) {
    const attn = this.held.makeProxy(0, Object.keys(MODULE_CALLS));
    Object.assign(attn, props);
    const dispose = attn.dispose;
    attn.dispose = async () => {
      if (this.ended) return;
      await dispose();
      this.end(
        new AttnkitError(
          "attnkit: expected a live worker, got one that was disposed (call createAttnkitWorker() again)",
          { code: "disposed", parameter: "attnkit" },
        ),
      );
    };
    attn.terminate = () => {
      if (this.ended) return;
      this.end(
        abortError(
          "terminate",
          "expected the call to finish, got the worker terminated (call createAttnkitWorker() again)",
        ),
      );
      // Later calls: as after dispose().
      this.ended = new AttnkitError(
        "attnkit: expected a live worker, got one that was terminated (call createAttnkitWorker() again)",
        { code: "disposed", parameter: "attnkit" },
      );
    };
    return Object.freeze(attn);
  }
}

/** Runs `fn` (which settles `job`), its abort listeners removed. */
function settle(job, fn) {
  if (job.signal) job.signal.removeEventListener("abort", job.onAbort);
  if (job.onOwnAbort) job.local.signal.removeEventListener("abort", job.onOwnAbort);
  if (job.onRunAbort) job.local.signal.removeEventListener("abort", job.onRunAbort);
  fn();
}

/**
 * An out (worker-wire.js) as the caller gets it: written into the caller's
 * array at its path in `originals`, or the array itself if that one moved.
 */
function decodeOut(value, originals) {
  let original = originals;
  for (const key of value[OUT]) original = original?.[key];
  if (ArrayBuffer.isView(original) && original.length === value.data.length) {
    original.set(value.data);
    return original;
  }
  return value.data; // the caller's array moved here and back: this is it now
}

/**
 * createAttnkitWorker for one platform: `platform.spawn(url)` starts the worker
 * script (`url`: the caller's options.workerUrl or undefined for the default)
 * and returns { post(message, transfer), listen(onMessage, onFailure),
 * terminate(), busy(isBusy) }.
 */
export function makeWorkerClient(platform) {
  return async function createAttnkitWorker(options) {
    const { load, transfer, workerUrl } = checkWorkerOptions(options);
    const client = new WorkerClient(platform.spawn(workerUrl), transfer);
    const props = await client.load(load, workerUrl);
    return client.moduleProxy(props);
  };
}
