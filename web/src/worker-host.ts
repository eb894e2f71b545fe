// What the Train and Language views' workers share: attnkit with the model loaded once, the
// page's messages handled in order once it is (a handler's error posted back as a message),
// training in short slices so that messages are answered between them, and a snapshot's
// model loaded for the time of one call.
import createAttnkit from "attnkit";
import type { AttnkitWithModel, Model, Tensor } from "attnkit";

/** An error as the page shows it. */
export function errorMessage(err: unknown): string {
  return err instanceof Error ? `${err.name}: ${err.message}` : String(err);
}

/** A Tensor as a plain { shape, data } object (what crosses to the page). */
export const copyT = (t: Tensor): Tensor => ({ shape: [...t.shape], data: t.data });

/**
 * Loads attnkit with the model, then hands each message to `handle` in the order it came
 * (those that came meanwhile wait); `fail` posts what went wrong, the load's or a handler's.
 */
export function serve<In>(
  loaded: (attn: AttnkitWithModel) => void,
  handle: (msg: In) => void,
  fail: (err: unknown) => void,
): void {
  const queue: In[] = [];
  let ready = false;
  const drain = () => {
    while (queue.length) {
      try {
        handle(queue.shift()!);
      } catch (err) {
        fail(err);
      }
    }
  };
  self.onmessage = (e: MessageEvent<In>) => {
    queue.push(e.data);
    if (ready) drain();
  };
  createAttnkit({ model: true }).then((a) => {
    loaded(a);
    ready = true;
    drain();
  }, fail);
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
