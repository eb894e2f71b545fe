// The page's side of a view's worker: created by the first message sent, its replies and
// its failure (to start, or later) handed to the view.

/** Sends messages to a worker that is created on the first one. */
export interface WorkerLink<To> {
  send(msg: To, transfer?: Transferable[]): void;
  /** Whether the worker has been created. */
  started(): boolean;
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
  return {
    send(msg, transfer = []) {
      if (!worker) {
        worker = start();
        worker.onmessage = (e: MessageEvent<From>) => receive(e.data);
        worker.onerror = (e) => failed(e.message || "it could not start");
      }
      worker.postMessage(msg, transfer);
    },
    started: () => worker !== null,
  };
}
