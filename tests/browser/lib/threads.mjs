// The built page served cross-origin isolated (the COOP/COEP headers npm start's preview
// sends), a copy of the page built with its service worker (ATTNKIT_WEB_SW=1), and the
// Language view's run that threads.test.mjs (Chromium) and lib/smoke-threads.mjs (Firefox,
// WebKit) compare across thread counts.
import { execFileSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { root } from "./paths.mjs";
import { serve } from "./server.mjs";
import { poll } from "./wait.mjs";

// The isolated runs' model: the small preset with one layer, d_model 128 and a context of 256,
// so that each attention call (12 x 4 heads x 256^2 x 64 multiply-adds) is past the core's
// cut-off for its pool and 2 threads really split it.
export const POOLED = "v=language&lp=small&ll=1&ldm=128&lctx=256&lb=12";

/**
 * `steps` presses of the Language view's Step, as a person does (`click(selector)`; `hook()`
 * reads window.__attnkit.language()): the run's losses and its sentence's maps after.
 */
export async function stepRun(click, hook, steps) {
  for (let k = 1; k <= steps; ++k) {
    await click('[data-testid="lang-step"]');
    await poll(async () => (await hook()).step === k, `step ${k}`, 60000, 100);
  }
  const h = await poll(
    async () => {
      const x = await hook();
      return x.sentence?.step === steps && x.losses.length === steps && x;
    },
    `the sentence's maps at step ${steps}`,
    60000,
  );
  return { threads: h.threads, losses: h.losses, maps: h.sentence.layers };
}

/** The built page served cross-origin isolated (server.mjs's serve with `isolated`). */
export const serveIsolated = (dir) => serve(dir, { isolated: true });

/** Builds the page with its service worker into a new temporary folder; returns the folder. */
export function buildWithServiceWorker() {
  const out = mkdtempSync(path.join(tmpdir(), "attnkit-web-sw-"));
  execFileSync(path.join(root, "node_modules/.bin/vite"), ["build", "web", "--logLevel", "error"], {
    cwd: root,
    env: { ...process.env, ATTNKIT_WEB_SW: "1", ATTNKIT_WEB_DIST: out },
    stdio: ["ignore", "ignore", "inherit"],
  });
  return out;
}

/** Waits for a fresh run (step 0) on `threads` threads; `ready(what)` waits for the view's model. */
export const freshRunOn = (threads, ready) =>
  poll(
    async () => {
      const x = await ready(`the model on ${threads} thread${threads === 1 ? "" : "s"}`);
      return x.threads === threads && x.step === 0 && x;
    },
    `the new run on ${threads} thread${threads === 1 ? "" : "s"}`,
    90000,
  );
