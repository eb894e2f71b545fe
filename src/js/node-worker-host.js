// The worker_threads Worker of attnkit/worker: serves attnkit (every build, as
// the "attnkit" entry point holds them) to the thread that started it.
import { parentPort } from "node:worker_threads";
import { createAttnkit } from "./node.js";
import { serve } from "./worker-host.js";

serve(
  {
    post: (message, transfer) => parentPort.postMessage(message, transfer),
    listen: (fn) => parentPort.on("message", fn),
  },
  createAttnkit,
);
