// The module Web Worker of attnkit/worker: serves attnkit (every build, as the
// "attnkit" entry point holds them) to the page that started it.
import { createAttnkit } from "./web.js";
import { serve } from "./worker-host.js";

serve(
  {
    post: (message, transfer) => self.postMessage(message, transfer),
    listen: (fn) => self.addEventListener("message", (e) => fn(e.data)),
  },
  createAttnkit,
);
