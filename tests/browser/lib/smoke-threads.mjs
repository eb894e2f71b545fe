// Threads in the browsers without Playwright (firefox.test.mjs, webkit.test.mjs), behind
// smoke.mjs's driver interface: the built page served cross-origin isolated, as npm start
// serves it. Where the browser isolates it, the Language view's worker runs the threads
// build on 2 threads and says so, and the learner's pick of 1 thread (then Reset) gives the
// same losses and sentence maps bit for bit; where it does not, the page trains on one
// thread and says why. (threads.test.mjs is the same in Chromium, with the service worker.)
import assert from "node:assert/strict";
import { describe } from "node:test";
import { useDriver } from "./smoke.mjs";
import { freshRunOn, POOLED, serveIsolated, stepRun as stepRunIn } from "./threads.mjs";
import { poll } from "./wait.mjs";

// Steps each run takes with the Step button.
const STEPS = 3;

/**
 * Registers the threads smoke test: a browser of its own (useDriver's `open`); `serveDist`
 * serves the built page cross-origin isolated.
 */
export function threadsSmoke(name, open, { serveDist = serveIsolated } = {}) {
  describe(`${name}: threads`, () => {
    const s = useDriver(name, open, { serveDist, firstPage: false });
    const hook = () => s.d.evaluate(() => window.__attnkit.language());
    const ready = (what) =>
      poll(
        async () => {
          const h = await hook();
          return h.ready && h.drawn && h.sentence && !h.training && h;
        },
        what,
        90000,
        200,
      );
    const stepRun = () => stepRunIn((sel) => s.d.click(sel), hook, STEPS);

    s.test(
      `${name}: served isolated, 2 threads or a stated fallback; 1 thread picked gives the same bits`,
      { timeout: 400000 },
      async () => {
        await s.d.goto(`${s.server.url}?${POOLED}`);
        const isolated = await s.d.evaluate(() => globalThis.crossOriginIsolated === true);
        const cores = await s.d.evaluate(() => navigator.hardwareConcurrency);
        const h = await ready("the Language view's model");
        const status = await s.text("#lang-status");
        console.log(
          `# ${name}: crossOriginIsolated ${isolated}, ${cores} cores, ${h.threads} threads`,
        );
        if (!isolated || cores < 2 || h.threads === 1) {
          // A fallback: one thread, and beside the control why (not isolated, or the
          // threads build would not load here); it trains.
          assert.equal(h.threads, 1);
          assert.match(status, /1 thread in a worker/);
          const note = await s.text('[data-testid="lang-threads-note"]');
          console.log(`# ${name}: ${note}`);
          if (!isolated) assert.match(note, /not cross-origin isolated/);
          else if (cores >= 2)
            assert.match(note, /^2 threads asked, 1 thread loaded: .*did not load/);
          const run = await stepRun();
          assert.ok(run.losses.every(Number.isFinite), `losses ${run.losses}`);
          await s.shot("threads-fallback");
        } else {
          assert.equal(h.threads, 2, "the worker loaded the threads build with 2 threads");
          assert.match(status, /2 threads in a worker/);
          const two = await stepRun();
          await s.shot("threads-2");
          await s.d.select('[data-testid="lang-threads"]', "1");
          await s.d.click('[data-testid="lang-reset"]');
          await freshRunOn(1, ready);
          assert.match(await s.text("#lang-status"), /1 thread in a worker/);
          const one = await stepRun();
          assert.deepEqual(one.losses, two.losses, "the losses of 1 and 2 threads");
          assert.deepEqual(one.maps, two.maps, "the sentence's maps of 1 and 2 threads");
          await s.shot("threads-1");
        }
        assert.deepEqual(await s.d.problems(), []);
      },
    );
  });
}
