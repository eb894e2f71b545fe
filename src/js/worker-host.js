// attnkit's worker API, the worker's side: loads the package with the
// caller's options, runs each call it is sent on the module or on an object it
// holds (KVCache, Model, Trainer, TaskGenerator), and answers with the result,
// the arrays moved (transferred) back, or the error. Calls come by message, or
// in shared memory (the shared channel, worker-wire.js) with the answer
// written back there. One call at a time, in the order sent: the page's side
// queues them (worker-api.js).
import {
  ANSWER_BY_MESSAGE,
  ANSWER_IN_BLOCK,
  CTL,
  HANDLE,
  OUT,
  TF,
  errorToWire,
  isPlain,
  readShared,
  tfFromWire,
  transferable,
  writeShared,
} from "./worker-wire.js";

// How long the worker waits for the next call through shared memory after an
// answer, blocked in Atomics.wait (see linger()): a futex wakes it sooner than
// its event loop would.
const LINGER_MS = 50;

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

  /** Runs `method` on the module (target 0) or a held object; `inputs` as fromWire fills it. */
  function invoke(target, method, args, inputs) {
    const self = target ? objects.get(target) : attn;
    if (!self || typeof self[method] !== "function" || method === "constructor") {
      throw new TypeError(
        `attnkit worker: no method ${method} on ${target ? "that object" : "the module"}`,
      );
    }
    return self[method](...fromWire(args, inputs, []));
  }

  function call({ id, target, method, args, pooled }) {
    const self = target ? objects.get(target) : attn;
    const inputs = new Map();
    const value = invoke(target, method, args, inputs);
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

  // The shared channel (worker-wire.js), once the caller has opened it.
  let channel = null;
  // Messages received (the caller counts those it posts in ctl's MAIL).
  let received = 0;

  /**
   * Answers the call `id` whose arguments are in the shared block: the
   * answer in the block after them, or, when it does not fit there, by
   * message (its arrays copied out of the block); ANS bumped either way.
   */
  function answerShared(id) {
    const { ctl, block } = channel;
    let answer;
    const transfer = [];
    try {
      const { method, args } = readShared(block, ctl[CTL.REQ_AT], ctl[CTL.REQ_CHARS]);
      const inputs = new Map();
      const value = invoke(0, method, args, inputs);
      answer = { id, ok: true, value: toWire(value, transfer, inputs) };
    } catch (e) {
      answer = { id, ok: false, error: errorToWire(e) };
    }
    const from = ctl[CTL.ANS_FROM];
    const w = writeShared(answer, block, from);
    const inBlock = w !== null && w.need === undefined;
    if (inBlock) {
      ctl[CTL.ANS_AT] = w.at;
      ctl[CTL.ANS_CHARS] = w.chars;
    } else {
      ctl[CTL.ANS_NEED] = w ? w.need - from : 0;
    }
    ctl[CTL.ANS_KIND] = inBlock ? ANSWER_IN_BLOCK : ANSWER_BY_MESSAGE;
    // ANS first, then the message: the caller's next call reads ANS after this one.
    Atomics.store(ctl, CTL.ANS, id);
    Atomics.notify(ctl, CTL.ANS);
    if (!inBlock) port.post(unshare(answer, block), transfer);
  }

  /** `value` with its arrays in `block` copied out (a message must not carry the block). */
  function unshare(value, block) {
    if (ArrayBuffer.isView(value)) return value.buffer === block ? value.slice() : value;
    if (value === null || typeof value !== "object" || !isPlain(value)) return value;
    if (Array.isArray(value)) return value.map((v) => unshare(v, block));
    const out = {};
    for (const [k, v] of Object.entries(value)) out[k] = unshare(v, block);
    return out;
  }

  /** The call made through the block since the last look, if any: answered. */
  function checkShared() {
    const id = Atomics.load(channel.ctl, CTL.REQ);
    if (id === channel.seen) return false;
    channel.seen = id;
    answerShared(id);
    return true;
  }

  /**
   * After an answer, the worker blocks in Atomics.wait for up to LINGER_MS for
   * the caller's next call, which then wakes it directly (a futex) instead of
   * through the event loop; a message posted to it ends the wait at once (the
   * caller counts its messages in MAIL and wakes the worker for each).
   */
  function linger() {
    const { ctl } = channel;
    let until = performance.now() + LINGER_MS;
    for (;;) {
      if (Atomics.load(ctl, CTL.MAIL) !== received) return; // messages to take first
      const wake = Atomics.load(ctl, CTL.WAKE);
      if (checkShared()) {
        until = performance.now() + LINGER_MS;
        continue;
      }
      const left = until - performance.now();
      if (left <= 0) return;
      Atomics.wait(ctl, CTL.WAKE, wake, left);
    }
  }

  /** Waits (in the event loop) for the caller to wake the worker: a call, or a message. */
  function waitShared() {
    const { ctl } = channel;
    for (;;) {
      const wake = Atomics.load(ctl, CTL.WAKE);
      if (checkShared()) {
        if (LINGER_MS > 0) linger();
        continue;
      }
      const wait = Atomics.waitAsync(ctl, CTL.WAKE, wake);
      if (wait.async) wait.value.then(waitShared);
      else queueMicrotask(waitShared);
      return;
    }
  }

  function openChannel(ctl) {
    channel = { ctl, block: null, seen: Atomics.load(ctl, CTL.REQ) };
    waitShared();
  }

  port.listen((message) => {
    ++received;
    const { id, op } = message;
    if (op === "shared") {
      // A call in a new (larger) block, which the worker keeps for the next ones.
      channel.block = message.block;
      answerShared(id);
      return;
    }
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
          if (message.channel) openChannel(message.channel);
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
