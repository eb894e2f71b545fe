// The Train view in the browsers without Playwright (firefox.test.mjs, webkit.test.mjs),
// in a browser of its own behind smoke.mjs's driver interface: induction trained to 90% in the page's
// worker, with screenshots before and after; the page draws the worker's inspections while it
// trains (lib/training.mjs).
import assert from "node:assert/strict";
import { describe } from "node:test";
import { useDriver } from "./smoke.mjs";
import { assertAnsweredWhileTraining, loadedModelBuild } from "./training.mjs";
import { poll } from "./wait.mjs";

/** Registers the Train view's smoke test: a browser of its own (useDriver's `open`, `options`). */
export function trainSmoke(name, open, options) {
  describe(`${name}: the Train view`, () => {
    const s = useDriver(name, open, { ...options, firstPage: false });
    s.test(
      `${name}: induction trains to >= 90% in the Train view; the page draws its steps meanwhile`,
      { timeout: 400000 },
      async () => {
        await s.d.goto(`${s.server.url}?v=train`);
        await poll(
          () => s.d.evaluate(() => !!window.__attnkit?.train().ready),
          "the Train view's run",
          60000,
        );
        await s.shot("train-before");
        const hook = () => s.d.evaluate(() => window.__attnkit.train());
        const t0 = Date.now();
        await s.d.click('[data-testid="train-go"]');
        // The worker's inspection of a later step, drawn by the page while training goes on.
        await assertAnsweredWhileTraining({
          hook,
          what: "an inspection drawn while training",
          answer: async () => {
            const { step } = await hook();
            const h = await poll(
              async () => {
                const h = await hook();
                return h.inspectionStep > step && h;
              },
              "an inspection of a later step",
              60000,
            );
            return h.inspectionStep;
          },
        });
        const h = await poll(
          async () => {
            const t = await hook();
            return t.lastEval?.accuracy >= 0.9 && t;
          },
          "held-out accuracy >= 90%",
          300000,
          500,
        );
        const seconds = (Date.now() - t0) / 1000;
        await s.d.click('[data-testid="train-pause"]');
        console.log(
          `# ${name}: induction ${(100 * h.lastEval.accuracy).toFixed(1)}% held-out after ${h.lastEval.step} steps, ${seconds.toFixed(1)} s from pressing Train`,
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
        assert.equal(
          await s.d.evaluate(loadedModelBuild),
          false,
          "the page loaded the model build",
        );
      },
    );
  });
}
