// The Train and Language views train in a worker and keep answering the learner meanwhile:
// asserted by the order of what happens, never by how long anything takes (a loaded
// machine is slow, not broken; the page's speed is measured by `npm run bench -- --only page`).
import assert from "node:assert/strict";
import { poll } from "./wait.mjs";

/** Run in the page or a worker: whether it loaded a model build of attnkit itself. */
export const loadedModelBuild = () =>
  performance.getEntriesByType("resource").some((r) => /attnkit-[a-z]+-model[.-]/.test(r.name));

/**
 * While the view trains, `answer()` makes a request of the page (a learner's input, or the
 * page's own) and resolves, once the page shows the answer, to the training step the answer is
 * of. The page's main thread must handle it and the worker answer it between its steps while
 * training goes on: the answer is of a step at or after the request, shown while training,
 * and training steps on after it. A page that trains on its main thread, or a worker that
 * answers only once training stops, fails here whatever the machine's speed. `hook()` reads
 * the view's hook (training, step).
 */
export async function assertAnsweredWhileTraining({ hook, answer, what }) {
  const before = await poll(async () => {
    const h = await hook();
    return h.training && h;
  }, `${what}: training`);
  const step = await answer();
  const shown = await hook();
  assert.ok(shown.training, `${what}: answered only once training had stopped`);
  assert.ok(step >= before.step, `${what}: answered with step ${step}, asked at ${before.step}`);
  const later = await poll(
    async () => {
      const h = await hook();
      return (h.step > step || !h.training) && h;
    },
    `${what}: a step after the answer`,
    60000,
  );
  assert.ok(later.training, `${what}: training stopped at step ${later.step} after the answer`);
}
