// attnkit's worker API, the caller's side: createAttnkitWorker() starts a
// worker that loads the package (worker-host.js) and returns an object with
// the synchronous API's calls, each returning a Promise. Calls run one at a
// time in the order made, from one queue per worker; a call waiting in the
// queue can be cancelled (an AbortSignal); a running one only by terminate().
// Objects the worker holds (KV caches, models, trainers, task generators) come
// back as proxies whose calls go through the same queue.
import { AttnkitError, typeError } from "./errors.js";
import { checkKeys, isObject } from "./convert.js";
import { isOrtTensor, isTfTensor } from "./interop.js";
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

const OPTION_KEYS = ["simd", "threads", "model", "wasmPaths", "wasmBinary", "timeout"];
// The module's calls that copy their inputs into wasm memory and keep no
// reference to them: their copied inputs go in the client's reused buffers
// (BufferPool), which the worker sends back after the call.
const POOLED_METHODS = new Set([
  "attention",
  "selfAttention",
  "crossAttention",
  "parameterFreeAttention",
  "attentionForTraining",
  "attentionBackward",
  "selfAttentionBackward",
  "multiHeadAttention",
  "multiHeadAttentionQKV",
  "multiHeadAttentionQKVForTraining",
  "multiHeadAttentionQKVBackward",
  "multiHeadAttentionBackward",
  "trace",
  "traceQKV",
  "traceBackward",
  "traceBackwardQKV",
  "matmul",
  "softmax",
  "splitHeads",
  "mergeHeads",
]);
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
  checkKeys("options", options, [...OPTION_KEYS, ...WORKER_KEYS], "option");
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
  if (
    signal !== undefined &&
    !(
      isObject(signal) &&
      typeof signal.aborted === "boolean" &&
      typeof signal.addEventListener === "function" &&
      typeof signal.removeEventListener === "function"
    )
  ) {
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

/** An AbortSignal's reason as the call's rejection: an AbortError-like AttnkitError. */
function aborted(signal) {
  return abortError(
    "options.signal",
    "expected the call to run, got it cancelled before it started",
    signal.reason,
  );
}

/**
 * createAttnkitWorker for one platform: `platform.spawn(url)` starts the worker
 * script (`url`: the caller's options.workerUrl or undefined for the default)
 * and returns { post(message, transfer), listen(onMessage, onFailure),
 * terminate(), busy(isBusy) }.
 */
export function makeWorkerClient(platform) {
  return async function createAttnkitWorker(options) {
    const { load, transfer: transferByDefault, workerUrl } = checkWorkerOptions(options);
    const worker = platform.spawn(workerUrl);
    let nextId = 1;
    let running = null; // the job the worker runs
    const queue = []; // jobs not sent yet, in order
    let ended = null; // the error every later call rejects with
    const proxies = new Map(); // handle id -> WeakRef of its proxy
    const handleIds = new WeakMap(); // proxy -> handle id
    const pool = new BufferPool();
    const states = new WeakMap(); // proxy -> its latest state
    const registry =
      typeof FinalizationRegistry === "function"
        ? new FinalizationRegistry((id) => {
            // A newer proxy of the same object (sent again since) keeps it.
            if (ended || proxies.get(id)?.deref()) return;
            proxies.delete(id);
            worker.post({ op: "forget", target: id }, []);
          })
        : null;

    function end(error) {
      if (ended) return;
      ended = error;
      const jobs = running ? [running, ...queue] : [...queue];
      running = null;
      queue.length = 0;
      for (const job of jobs) settle(job, () => job.reject(error));
      worker.terminate();
    }

    worker.listen(
      (message) => {
        const job = running;
        if (!job || message.id !== job.id) return;
        running = null;
        // The buffers the call's copied inputs went in, back for the next call.
        if (message.spare) for (const b of message.spare) pool.give(b);
        settle(job, () => {
          if (!message.ok) return job.reject(errorFromWire(message.error));
          if (message.state && job.self) states.set(job.self, decode(message.state, job));
          job.resolve(decode(message.value, job));
        });
        pump();
      },
      (error) => end(error),
    );

    function settle(job, fn) {
      if (job.signal) job.signal.removeEventListener("abort", job.onAbort);
      fn();
    }

    /** The next queued job, sent once the worker is free. */
    function pump() {
      worker.busy(running !== null || queue.length > 0);
      if (running || ended || queue.length === 0) return;
      const job = queue.shift();
      running = job;
      if (job.pending.length === 0) {
        try {
          send(job);
        } catch (e) {
          running = null;
          settle(job, () => job.reject(e));
          pump();
        }
        return;
      }
      Promise.all(job.pending)
        .then((values) => {
          if (running !== job) return;
          job.pending.forEach((p, i) => job.fill[i](values[i]));
          send(job);
        })
        .catch((e) => {
          if (running !== job) return;
          running = null;
          settle(job, () => job.reject(e));
          pump();
        });
    }

    /**
     * Posts the job. Its pooled inputs are copied now, as it leaves the queue:
     * the queue holds no copies, and the buffers the last call gave back are
     * there to reuse.
     */
    function send(job) {
      const message = { id: job.id, op: job.op, target: job.target, method: job.method };
      const args = job.pool ? copyPooled(job.args, job) : job.args;
      message[job.op === "load" ? "options" : "args"] = args;
      if (job.pooled.length) message.pooled = job.pooled;
      try {
        try {
          worker.post(message, job.transfer);
        } catch (e) {
          // A buffer that cannot move (e.g. a view of wasm memory): copied instead.
          if (job.transfer.length === 0 || e?.name === "DataCloneError") throw e;
          worker.post(message, []);
        }
      } catch (e) {
        for (const b of job.pooled) pool.give(b);
        if (e?.name !== "DataCloneError") throw e;
        throw uncloneable(job.originals, e);
      }
    }

    /** `value` with each typed array of POOL_MIN_BYTES or more copied into a pooled buffer. */
    function copyPooled(value, job) {
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
      if (Array.isArray(value)) return value.map((v) => copyPooled(v, job));
      const out = {};
      for (const [k, v] of Object.entries(value)) out[k] = copyPooled(v, job);
      return out;
    }

    /**
     * Queues a call of `method` on the module (target 0) or a held object. The
     * arguments are walked now (proxies as handles, ort tensors' data, tfjs
     * tensors' data() started, awaited before sending); their arrays are read
     * when the call is sent (copied or moved then).
     */
    function enqueue(op, target, method, args, callOptions, self) {
      return new Promise((resolve, reject) => {
        if (ended) return reject(ended);
        const signal = callOptions?.signal;
        if (signal?.aborted) return reject(aborted(signal));
        const transfer = callOptions?.transfer ?? transferByDefault;
        const job = { id: nextId++, op, target, method, self, resolve, reject, signal };
        job.pending = [];
        job.fill = [];
        job.originals = args;
        job.transfer = [];
        // Copied inputs of a call that keeps none go in reused buffers (when sent).
        job.pooled = [];
        job.pool = !transfer && target === 0 && POOLED_METHODS.has(method);
        try {
          job.args = encode(args, job, transfer);
        } catch (e) {
          return reject(e);
        }
        if (signal) {
          job.onAbort = () => {
            const at = queue.indexOf(job);
            if (at < 0) return; // running: its result still comes
            queue.splice(at, 1);
            reject(aborted(signal));
            worker.busy(running !== null || queue.length > 0);
          };
          signal.addEventListener("abort", job.onAbort, { once: true });
        }
        queue.push(job);
        pump();
      });
    }

    /**
     * The arguments as they are sent (worker-wire.js): proxies as handles, ort
     * and tfjs tensors with their element type (the worker's call checks it),
     * functions and symbols as stand-ins; with `transfer`, the typed arrays'
     * buffers are listed to move (never a tfjs tensor's: tfjs keeps using it).
     */
    function encode(value, job, transfer) {
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
      const id = handleIds.get(value);
      if (id !== undefined) return { [HANDLE]: id };
      // Another worker's proxy (or this module's): an object not held here.
      if (value[PROXY] === true) return { [HANDLE]: 0 };
      if (isOrtTensor(value)) {
        // Its data is read only on the CPU (a GPU tensor's getter throws); the
        // worker's call checks the type and location as the synchronous one does.
        const { type, dims, location } = value;
        const onCpu = location === undefined || location === "cpu";
        const data = onCpu ? encode(value.data, job, transfer) : null;
        return { [ORT]: true, type, dims: dims.slice(), location, data };
      }
      if (isTfTensor(value)) {
        const { dtype, isDisposed } = value;
        const out = {
          [TF]: true,
          dtype,
          shape: value.shape.slice(),
          data: null,
          disposed: isDisposed,
        };
        if (isDisposed) return out; // the worker names it
        job.pending.push(value.data());
        job.fill.push((data) => (out.data = data));
        return out;
      }
      if (Array.isArray(value)) return value.map((v) => encode(v, job, transfer));
      if (!isPlain(value)) return value; // sent as structured clone takes it
      const out = {};
      for (const [k, v] of Object.entries(value)) out[k] = encode(v, job, transfer);
      return out;
    }

    /** A result as the caller gets it: handles as proxies, outs in the caller's arrays. */
    function decode(value, job) {
      if (value === null || typeof value !== "object" || ArrayBuffer.isView(value)) return value;
      if (Array.isArray(value)) return value.map((v) => decode(v, job));
      if (FROZEN in value) return Object.freeze(decode(value[FROZEN], job));
      if (THROWN in value) return new Thrown(value[THROWN]);
      if (typeof value[HANDLE] === "number") return proxyFor(value, job);
      if (Array.isArray(value[OUT])) {
        let original = job.originals;
        for (const key of value[OUT]) original = original?.[key];
        if (ArrayBuffer.isView(original) && original.length === value.data.length) {
          original.set(value.data);
          return original;
        }
        return value.data; // the caller's array moved here and back: this is it now
      }
      const out = {};
      for (const [k, v] of Object.entries(value)) out[k] = decode(v, job);
      return out;
    }

    /** The proxy of a held object: its properties from its latest state, its calls queued. */
    function proxyFor(handle, job) {
      const id = handle[HANDLE];
      const known = proxies.get(id)?.deref();
      if (known) return known;
      const proxy = makeProxy(id, handle.methods ?? []);
      states.set(proxy, decode(handle.state ?? {}, job));
      for (const key of Object.keys(handle.state ?? {})) {
        const get = () => {
          const value = states.get(proxy)[key];
          if (value instanceof Thrown) throw errorFromWire(value.error);
          return value;
        };
        Object.defineProperty(proxy, key, { get, enumerable: true });
      }
      Object.defineProperty(proxy, Symbol.toStringTag, { value: `Async${handle.kind}` });
      proxies.set(id, new WeakRef(proxy));
      handleIds.set(proxy, id);
      registry?.register(proxy, id);
      return proxy;
    }

    /** An object with `methods` queued on target `id`, and with(options) for per-call options. */
    function makeProxy(id, methods) {
      const proxy = {};
      Object.defineProperty(proxy, PROXY, { value: true });
      for (const method of methods) {
        proxy[method] = (...args) => enqueue("call", id, method, args, undefined, proxy);
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
          calls[method] = { value: (...args) => enqueue("call", id, method, args, o, proxy) };
        }
        return Object.defineProperties(view, calls);
      };
      return proxy;
    }

    // The module: load, then its calls.
    let info;
    try {
      info = await enqueue("load", 0, "", load, undefined, null);
    } catch (e) {
      end(e);
      // The worker script itself did not run: a load failure, as createAttnkit's.
      if (e.code !== "aborted") throw e;
      const parameter = workerUrl === undefined ? "options" : "options.workerUrl";
      throw new AttnkitError(
        `${parameter}: expected attnkit/worker's worker script to load, got: ${e.message}`,
        { code: "load_failed", parameter },
      );
    }
    const attn = makeProxy(0, info.methods);
    Object.assign(attn, info.props);
    const dispose = attn.dispose;
    attn.dispose = async () => {
      if (ended) return;
      await dispose();
      end(
        new AttnkitError(
          "attnkit: expected a live worker, got one that was disposed (call createAttnkitWorker() again)",
          { code: "disposed", parameter: "attnkit" },
        ),
      );
    };
    attn.terminate = () => {
      if (ended) return;
      end(
        abortError(
          "terminate",
          "expected the call to finish, got the worker terminated (call createAttnkitWorker() again)",
        ),
      );
      // Later calls: as after dispose().
      ended = new AttnkitError(
        "attnkit: expected a live worker, got one that was terminated (call createAttnkitWorker() again)",
        { code: "disposed", parameter: "attnkit" },
      );
    };
    return Object.freeze(attn);
  };
}
