// The Language view in the browsers without Playwright (firefox.test.mjs, webkit.test.mjs),
// in a browser of its own behind smoke.mjs's driver interface: the small preset trained on Moby-Dick in
// the page's worker below a measured validation loss, its sample, and a generation whose
// cache equals the full forward; screenshots before and after.
import assert from "node:assert/strict";
import { describe } from "node:test";
import { useDriver } from "./smoke.mjs";
import { poll } from "./wait.mjs";

// Measured in Chromium: 2.44 nats/char at step 200 (the bigram model's 2.44 is near).
const STEPS = 200;
const THRESHOLD = 2.6;

/** Registers the Language view's smoke test: a browser of its own (useDriver's `open`, `options`). */
export function languageSmoke(name, open, options) {
  describe(`${name}: the Language view`, () => {
    const s = useDriver(name, open, { ...options, firstPage: false });
    const hook = () => s.d.evaluate(() => window.__attnkit.language());

    s.test(
      `${name}: the small preset learns Moby-Dick, samples and generates through the cache`,
      { timeout: 400000 },
      async () => {
        await s.d.goto(`${s.server.url}?v=language&lp=small`);
        await poll(
          () => s.d.evaluate(() => !!window.__attnkit?.language().sentence),
          "the Language view's model",
          90000,
          200,
        );
        await s.shot("language-before");
        await s.d.click('[data-testid="lang-go"]');
        await poll(async () => (await hook()).step >= STEPS, `${STEPS} steps`, 300000, 500);
        await s.d.click('[data-testid="lang-pause"]');
        const h = await poll(
          async () => {
            const s = await hook();
            return !s.training && s.sample?.step === s.step && s;
          },
          "the pause and its sample",
          30000,
        );
        const v = h.validation.find(([s]) => s === STEPS);
        console.log(
          `# ${name}: Language view, validation ${v?.[1].toFixed(3)} nats/char after ${STEPS} steps of the small preset, ${(h.trainingMs / 1000).toFixed(1)} s of training`,
        );
        assert.ok(v && v[1] < THRESHOLD, `validation ${JSON.stringify(h.validation.slice(-2))}`);
        assert.equal(h.sample.text.length, 180);
        await s.d.click('[data-testid="lang-generate"]');
        const g = await poll(
          async () => {
            const s = await hook();
            return !s.gen.running && s.gen.check && s.gen;
          },
          "a generation and its check",
          60000,
          200,
        );
        assert.ok(g.check.checked > 0);
        assert.ok(g.check.maxWeightDelta < 1e-5, `weights max |Δ| ${g.check.maxWeightDelta}`);
        assert.ok(g.check.maxLogitDelta < 1e-3, `logits max |Δ| ${g.check.maxLogitDelta}`);
        await s.shot("language-after");
        assert.deepEqual(await s.d.problems(), []);
      },
    );
  });
}
