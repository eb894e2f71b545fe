// The Train view in the browsers without Playwright (firefox.test.mjs, webkit.test.mjs),
// in a browser of its own behind smoke.mjs's driver interface: induction trained to 90% in the page's
// worker, with screenshots before and after. These browsers have no Long Tasks API, so
// responsiveness is the lateness of a 20 ms timer on the main thread while it trains.
import assert from "node:assert/strict";
import { describe } from "node:test";
import { useDriver } from "./smoke.mjs";
import { poll } from "./wait.mjs";

/** Registers the Train view's smoke test: a browser of its own (useDriver's `open`, `options`). */
export function trainSmoke(name, open, options) {
  describe(`${name}: the Train view`, () => {
    const s = useDriver(name, open, { ...options, firstPage: false });
    s.test(
      `${name}: induction trains to >= 90% in the Train view; the main thread stays responsive`,
      { timeout: 400000 },
      async () => {
        await s.d.goto(`${s.server.url}?v=train`);
        await poll(
          () => s.d.evaluate(() => !!window.__attnkit?.train().ready),
          "the Train view's run",
          60000,
        );
        await s.shot("train-before");
        await s.d.evaluate(() => {
          window.__drift = 0;
          let last = performance.now();
          window.__timer = setInterval(() => {
            const now = performance.now();
            window.__drift = Math.max(window.__drift, now - last - 20);
            last = now;
          }, 20);
        });
        const t0 = Date.now();
        await s.d.click('[data-testid="train-go"]');
        const h = await poll(
          async () => {
            const t = await s.d.evaluate(() => window.__attnkit.train());
            return t.lastEval && t.lastEval.accuracy >= 0.9 && t;
          },
          "held-out accuracy >= 90%",
          300000,
          500,
        );
        const seconds = (Date.now() - t0) / 1000;
        const drift = await s.d.evaluate(() => {
          clearInterval(window.__timer);
          return window.__drift;
        });
        await s.d.click('[data-testid="train-pause"]');
        console.log(
          `# ${name}: induction ${(100 * h.lastEval.accuracy).toFixed(1)}% held-out after ${h.lastEval.step} steps, ${seconds.toFixed(1)} s from pressing Train; largest 20 ms timer lateness ${drift.toFixed(1)} ms`,
        );
        await poll(
          () =>
            s.d.evaluate(() => {
              const s = window.__attnkit.train();
              return !s.training && s.inspectionStep === s.step;
            }),
          "training to pause and its last step on screen",
          10000,
        );
        await s.shot("train-after");
        assert.deepEqual(await s.d.problems(), []);
        // Training runs in a worker: the page's timer is never held for 2 s, where training
        // on the main thread would hold it for the whole run (its lateness is reported above;
        // how late it runs says more of the machine's load: up to ~0.5 s in WebKitGTK here).
        assert.ok(drift < 2000, `the main thread was ${drift.toFixed(0)} ms late while training`);
      },
    );
  });
}
