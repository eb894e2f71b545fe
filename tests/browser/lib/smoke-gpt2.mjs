// The GPT-2 view in the browsers without Playwright (firefox.test.mjs, webkit.test.mjs), in
// a browser of its own behind smoke.mjs's driver interface: a model file dropped on the
// panel (a Language-view weights file, then a tiny GPT-2 checkpoint) opens after the
// confirmation, its maps equal the package's inspect (1e-6), and a generation's cache
// equals the full forward; a screenshot of each.
import assert from "node:assert/strict";
import { after, before, describe } from "node:test";
import { createAttnkit } from "attnkit";
import { dropArgs, dropOnPanel, languageWeights, mapsDelta, tinyGpt2 } from "./gpt2.mjs";
import { useDriver } from "./smoke.mjs";
import { poll } from "./wait.mjs";

/** Registers the GPT-2 view's smoke test: a browser of its own (useDriver's `open`, `options`). */
export function gpt2Smoke(name, open, options) {
  describe(`${name}: the GPT-2 view`, () => {
    const s = useDriver(name, open, { ...options, firstPage: false });
    const hook = () => s.d.evaluate(() => window.__attnkit.gpt2());
    let attn;
    before(async () => (attn = await createAttnkit({ model: true })));
    after(() => attn?.dispose());

    /** Drops `bytes` as `file`, confirms, waits for the model; checks its maps against `model`. */
    async function openAndCheck(files, model, shot) {
      const file = files[0][0];
      await s.d.evaluate(dropOnPanel, dropArgs(s.server, files));
      await poll(
        () =>
          s.d.evaluate(
            () =>
              !document.getElementById("gpt2-confirm")?.hidden &&
              !document.getElementById("gpt2-confirm-yes").hidden &&
              !/Reading/.test(document.getElementById("gpt2-confirm-text").textContent),
          ),
        "the confirmation",
        30000,
      );
      await s.d.click('[data-testid="gpt2-confirm-yes"]');
      const h = await poll(
        async () => {
          const x = await hook();
          return x.model?.from.includes(file) && x.sentence && !x.loading && x;
        },
        `${file} open`,
        90000,
        200,
      );
      const worst = mapsDelta(model, h.sentence);
      assert.ok(worst <= 1e-6, `${file}: maps max |Δ| ${worst}`);
      await s.shot(shot);
    }

    s.test(
      `${name}: models dropped on the view open, their maps equal inspect`,
      { timeout: 300000 },
      async () => {
        await s.d.goto(`${s.server.url}?v=gpt2`);
        await poll(
          () => s.d.evaluate(() => !!document.querySelector('[data-testid="gpt2-source"]')),
          "the GPT-2 view",
          60000,
          200,
        );
        const bytes = languageWeights(attn);
        const own = attn.loadModel(bytes);
        try {
          await openAndCheck([["mine.attnkit", bytes]], own, "gpt2-own");
        } finally {
          own.dispose();
        }
        const ckpt = tinyGpt2();
        const gpt2 = await attn.openCheckpoint(ckpt.safetensors, { config: ckpt.config });
        try {
          await openAndCheck(
            [
              ["model.safetensors", ckpt.safetensors],
              ["config.json", ckpt.configJson],
            ],
            gpt2,
            "gpt2-checkpoint",
          );
        } finally {
          gpt2.dispose();
        }
        await s.d.click('[data-testid="gpt2-generate"]');
        const g = await poll(
          async () => {
            const x = await hook();
            return (x.error || (!x.gen.running && x.gen.check)) && x;
          },
          "a generation and its check",
          60000,
          200,
        );
        assert.equal(g.error, "");
        assert.ok(g.gen.check.checked > 0);
        assert.ok(g.gen.check.maxWeightDelta < 1e-5, `weights |Δ| ${g.gen.check.maxWeightDelta}`);
        await s.noProblems();
      },
    );
  });
}
