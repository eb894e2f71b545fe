// The page's side of a view's worker: created by the first message sent, which it gets after
// the threads to load attnkit with (threads.ts); its replies and its failure (to start, or
// later) handed to the view.
import { threadChoice, type WorkerStart } from "./threads";

/** Sends messages to a worker that is created on the first one. */
export interface WorkerLink<To> {
  send(msg: To, transfer?: Transferable[]): void;
  /** Whether the worker has been created. */
  started(): boolean;
  /** The threads the worker was started with (0: none yet). */
  threads(): number;
  /** Whether the page's thread count differs from the worker's. */
  stale(): boolean;
  /** Ends the worker (its run with it): the next message starts one with the page's count. */
  restart(): void;
}

/**
 * `start` creates the worker (it must hold `new Worker(new URL(...), ...)` itself, so that
 * the bundler finds the worker's module), `receive` takes each message it posts, `failed`
 * why it failed.
 */
export function workerLink<To, From>(
  start: () => Worker,
  receive: (msg: From) => void,
  failed: (why: string) => void,
): WorkerLink<To> {
  let worker: Worker | null = null;
  let threads = 0;
  return {
    send(msg, transfer = []) {
      if (!worker) {
        worker = start();
        worker.onmessage = (e: MessageEvent<From>) => receive(e.data);
        worker.onerror = (e) => failed(e.message || "it could not start");
        threads = threadChoice.count;
        worker.postMessage({ type: "start", threads } satisfies WorkerStart);
      }
      worker.postMessage(msg, transfer);
    },
    started: () => worker !== null,
    threads: () => threads,
    stale: () => worker !== null && threads !== threadChoice.count,
    restart() {
      worker?.terminate();
      worker = null;
      threads = 0;
    },
  };
}
