// What the Train, Language and GPT-2 views' workers share: attnkit with the model loaded once
// (on the threads the page asks for), the page's messages handled in order once it is (a
// handler's error posted back as a message), training in short slices so that messages are
// answered between them, and a snapshot's model loaded for the time of one call.
import createAttnkit from "attnkit";
import type { AttnkitWithModel, GeneratedCharacter, Model, Sampler, Tensor } from "attnkit";
import type { Engine, WorkerStart } from "./threads";

/** An error as the page shows it. */
export function errorMessage(err: unknown): string {
  return err instanceof Error ? `${err.name}: ${err.message}` : String(err);
}

// Why the threads build did not load in this worker (loadAttnkit), or empty.
let fallback = "";

/** What runs the model, as the views state it (engineText, threads.ts). */
export const engineOf = (attn: AttnkitWithModel): Engine => ({
  target: attn.target,
  simd: attn.simd,
  threads: attn.threads,
  fallback,
});

/** A Tensor as a plain { shape, data } object (what crosses to the page). */
export const copyT = (t: Tensor): Tensor => ({ shape: [...t.shape], data: t.data });

/**
 * attnkit with the model on `threads` threads (the threads build), or on one thread where
 * that build does not load (the page then shows the count it got, attn.threads).
 */
async function loadAttnkit(threads: number): Promise<AttnkitWithModel> {
  if (threads > 1) {
    try {
      return await createAttnkit({ model: true, threads });
    } catch (err) {
      fallback = `the threads build did not load in this browser (${errorMessage(err)})`;
      console.warn(`attnkit: ${threads} threads did not load, one instead: ${errorMessage(err)}`);
    }
  }
  return createAttnkit({ model: true });
}

/**
 * Once the page's first message (WorkerStart) says how many threads, loads attnkit with the
 * model, then hands each message to `handle` in the order it came (those that came meanwhile
 * wait); `fail` posts what went wrong, the load's or a handler's.
 */
export function serve<In>(
  loaded: (attn: AttnkitWithModel) => void,
  handle: (msg: In) => void,
  fail: (err: unknown) => void,
): void {
  const queue: In[] = [];
  let ready = false;
  let starting = false;
  const drain = () => {
    while (queue.length) {
      try {
        handle(queue.shift()!);
      } catch (err) {
        fail(err);
      }
    }
  };
  self.onmessage = (e: MessageEvent<In | WorkerStart>) => {
    const msg = e.data;
    if (!starting && (msg as WorkerStart).type === "start") {
      starting = true;
      loadAttnkit((msg as WorkerStart).threads).then((a) => {
        loaded(a);
        ready = true;
        drain();
      }, fail);
      return;
    }
    queue.push(msg as In);
    if (ready) drain();
  };
}

/** Runs `fn` on a snapshot's model, loaded from its bytes and disposed after. */
export function withSnapshot<T>(
  attn: AttnkitWithModel,
  snapshot: { step: number; bytes: Uint8Array },
  fn: (m: Model, step: number) => T,
): T {
  const m = attn.loadModel(snapshot.bytes);
  try {
    return fn(m, snapshot.step);
  } finally {
    m.dispose();
  }
}

export interface TrainingLoop {
  readonly running: boolean;
  /** Trains from the next task on (nothing if it already does). */
  start(): void;
  stop(): void;
  /** The next slice now, if the loop waits between two. */
  hurry(): void;
}

/**
 * Training in slices of about `sliceMs`: `step(sliceStart, n)` (n: the step's count in its
 * slice, from 1) until the slice is used, then `afterSlice()`, which returns the ms to wait
 * before the next (messages are handled in between). An error stops the loop and goes to
 * `fail`; `state` runs after every slice.
 */
export function trainingLoop(o: {
  sliceMs: number;
  step: (sliceStart: number, n: number) => void;
  afterSlice: () => number;
  fail: (err: unknown) => void;
  state: () => void;
}): TrainingLoop {
  let running = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const slice = () => {
    timer = undefined;
    if (!running) return;
    let wait = 0;
    const t0 = performance.now();
    try {
      let n = 0;
      do o.step(t0, ++n);
      while (performance.now() - t0 < o.sliceMs);
      wait = o.afterSlice();
    } catch (err) {
      running = false;
      o.fail(err);
    }
    o.state();
    if (running) timer = setTimeout(slice, wait);
  };
  const later = () => {
    clearTimeout(timer);
    timer = setTimeout(slice, 0);
  };
  return {
    get running() {
      return running;
    },
    start() {
      if (running) return;
      running = true;
      later();
    },
    stop() {
      running = false;
      clearTimeout(timer);
      timer = undefined;
    },
    hurry() {
      if (timer !== undefined) later();
    },
  };
}

/** A generation's check (cacheCheck): tokens checked, the largest differences. */
export interface CacheCheck {
  checked: number;
  maxLogitDelta: number;
  maxWeightDelta: number;
}

/** One generated token as a view's worker keeps it for cacheCheck. */
export interface KeptStep {
  token: number;
  logits: Float32Array;
  /** Per layer, [numHeads, context]. */
  weights: Tensor[];
}

/**
 * The check of a generation through the KV cache: the same model's one full forward
 * (Model.inspect) over the prompt and the generated tokens gives, at the position before
 * each token, the logits it was sampled from and each head's attention over the cache.
 * Tokens whose context went past maxSeqLen (the cache was rebuilt) are not checked.
 */
export function cacheCheck(
  m: Model,
  prompt: readonly number[],
  steps: readonly KeptStep[],
): CacheCheck {
  const T = m.config.maxSeqLen;
  const V = m.config.vocabSize;
  const all = [...prompt, ...steps.map((s) => s.token)].slice(0, T);
  const r = m.inspect(all);
  const n = all.length;
  let checked = 0,
    maxLogitDelta = 0,
    maxWeightDelta = 0;
  steps.forEach((s, i) => {
    // Token i was sampled at position prompt + i - 1, its context prompt + i tokens.
    const pos = prompt.length + i - 1;
    if (prompt.length + i > T || pos >= n) return;
    checked++;
    for (let v = 0; v < V; v++)
      maxLogitDelta = Math.max(maxLogitDelta, Math.abs(r.logits.data[pos * V + v] - s.logits[v]));
    s.weights.forEach((w, l) => {
      const [H, C] = w.shape;
      const full = r.layers[l].weights;
      for (let h = 0; h < H; h++)
        for (let c = 0; c < C; c++)
          maxWeightDelta = Math.max(
            maxWeightDelta,
            Math.abs(w.data[h * C + c] - full.data[(h * n + pos) * n + c]),
          );
    });
  });
  return { checked, maxLogitDelta, maxWeightDelta };
}

/**
 * Generates `length` tokens of `sampler` (of `model`, from the `prompt` tokens): one per
 * timer `delayMs` apart, or, without a delay (reduced motion), as many as fit in `sliceMs`,
 * so that the timers' least interval does not pace them (messages are handled between).
 * `step(s, weights, index)` takes each token (its weights as plain tensors); at the end
 * `done` takes the check of the cache against one full forward. An error stops it and goes
 * to `fail`. stop() stops it; the sampler stays the caller's to dispose.
 */
export function runGeneration(o: {
  model: Model;
  sampler: Sampler;
  prompt: readonly number[];
  length: number;
  delayMs: number;
  sliceMs: number;
  step: (s: GeneratedCharacter, weights: Tensor[], index: number) => void;
  done: (check: CacheCheck) => void;
  fail: (err: unknown) => void;
}): { stop(): void } {
  const steps: KeptStep[] = [];
  let timer: ReturnType<typeof setTimeout> | undefined;
  let stopped = false;
  const next = () => {
    if (stopped) return;
    const t0 = performance.now();
    try {
      do {
        const s = o.sampler.next();
        const weights = s.weights.map(copyT);
        steps.push({ token: s.token, logits: Float32Array.from(s.logits), weights });
        o.step(s, weights, steps.length - 1);
      } while (o.delayMs === 0 && steps.length < o.length && performance.now() - t0 < o.sliceMs);
      if (steps.length < o.length) timer = setTimeout(next, o.delayMs);
      else {
        stopped = true;
        o.done(cacheCheck(o.model, o.prompt, steps));
      }
    } catch (err) {
      stopped = true;
      o.fail(err);
    }
  };
  timer = setTimeout(next, 0);
  return {
    stop() {
      stopped = true;
      clearTimeout(timer);
    },
  };
}
