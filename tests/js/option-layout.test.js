// The options' two sides (issue #43): each call kind's JS schema
// (src/js/options.js) against the C++ table that reads its words
// (src/core, src/bindings: optionLayout, optionDefaults), and the option tables of the
// docs and the .d.ts against the schema, so that an option added, moved or
// given a new default on one side only fails here.
import { describe, it, before } from "node:test";
import assert from "node:assert/strict";
import { createRequire } from "node:module";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import {
  ATTENTION_OPTIONS,
  DATASET_OPTIONS,
  GENERATE_OPTIONS,
  SAMPLING_OPTIONS,
  TRAINER_OPTIONS,
  wordLayout,
} from "../../src/js/options.js";
import { scalarWord } from "../../src/js/marshal.js";

const root = (path) => fileURLToPath(new URL(`../../${path}`, import.meta.url));
const SCHEMAS = {
  attention: ATTENTION_OPTIONS,
  trainer: TRAINER_OPTIONS,
  sampling: SAMPLING_OPTIONS,
};

describe("option schemas against the C++ decoders", () => {
  let M;
  before(async () => {
    // The model build: it has every table (attention, trainer, sampling).
    M = await createRequire(import.meta.url)(root("dist/attnkit-simd-model.node.cjs"))();
  });

  for (const [kind, schema] of Object.entries(SCHEMAS)) {
    it(`${kind}: the words the C++ table reads are the schema's, in order`, () => {
      assert.deepEqual(M.optionLayout(kind).split(","), wordLayout(schema));
    });
  }

  for (const kind of ["trainer", "sampling"]) {
    it(`${kind}: the schema's defaults are the C++ struct's, word for word`, () => {
      const words = SCHEMAS[kind].map((e) => scalarWord(e, e.default) >>> 0);
      assert.deepEqual(M.optionDefaults(kind).split(",").map(Number), words);
    });
  }

  it("an unknown kind has no words", () => {
    assert.equal(M.optionLayout("nothing"), "");
  });
});

/** The members of a .d.ts interface in order, each with its doc comment. */
function interfaceMembers(source, name) {
  const body = source.split(`export interface ${name} `)[1].split("\n}\n")[0];
  return [...body.matchAll(/\/\*\*([\s\S]*?)\*\/\s*(\w+)\?:/g)].map(([, doc, key]) => ({
    key,
    doc: doc.replace(/\s*\*\s*/g, " "),
  }));
}

// A number as the docs write it: 0, 0.98, 1e-3.
const NUMBER = String.raw`-?\d+(?:\.\d+)?(?:e-?\d+)?`;

/** The default a doc comment states: "default X" or "X (default)". */
function statedDefault(doc) {
  const m =
    new RegExp(`[Dd]efault (${NUMBER})`).exec(doc) ??
    new RegExp(`(${NUMBER}) \\(default\\)`).exec(doc);
  return m ? Number(m[1]) : undefined;
}

describe("the docs' and the types' option tables against the schemas", () => {
  const dts = readFileSync(root("src/js/attnkit.d.ts"), "utf8");
  const api = readFileSync(root("docs/api-js.md"), "utf8");

  it("docs/api-js.md lists every attention option, in the schema's order", () => {
    const table = api.split("### Options of every attention call")[1].split("\n\n")[1];
    const keys = [...table.matchAll(/^\| `(\w+)` \|/gm)].map((m) => m[1]);
    assert.deepEqual(
      keys,
      ATTENTION_OPTIONS.map((e) => e.name),
    );
  });

  it("AttentionOptions in the .d.ts has every attention option, in the schema's order", () => {
    const keys = interfaceMembers(dts, "AttentionOptions").map((m) => m.key);
    assert.deepEqual(
      keys,
      ATTENTION_OPTIONS.map((e) => e.name),
    );
  });

  for (const [name, schema] of [
    ["TrainerOptions", TRAINER_OPTIONS],
    ["SamplerOptions", SAMPLING_OPTIONS],
  ]) {
    it(`${name} in the .d.ts states the schema's defaults`, () => {
      const members = interfaceMembers(dts, name).filter((m) => m.key !== "seed");
      assert.deepEqual(
        members.map((m) => [m.key, statedDefault(m.doc)]),
        schema.map((e) => [e.name, e.default]),
      );
    });
  }

  // The text calls' options stay in JS: their keys and numeric defaults.
  for (const [name, schema] of [
    ["TextDatasetOptions", DATASET_OPTIONS],
    ["GenerateOptions", GENERATE_OPTIONS],
  ]) {
    it(`${name} in the .d.ts has the schema's optional keys and numeric defaults`, () => {
      const optional = schema.filter((e) => !e.required);
      assert.deepEqual(
        interfaceMembers(dts, name).map((m) => [
          m.key,
          typeof optional.find((e) => e.name === m.key)?.default === "number"
            ? statedDefault(m.doc)
            : undefined,
        ]),
        optional.map((e) => [e.name, typeof e.default === "number" ? e.default : undefined]),
      );
    });
  }

  it("docs/api-js.md's createTrainer row states the schema's defaults", () => {
    const row = api
      .split("\n")
      .find((line) => line.startsWith("| `createTrainer(model, options?)`"));
    const stated = Object.fromEntries(
      [...row.matchAll(new RegExp(`\`(\\w+)\` \\((${NUMBER})`, "g"))].map(([, key, value]) => [
        key,
        Number(value),
      ]),
    );
    assert.deepEqual(stated, Object.fromEntries(TRAINER_OPTIONS.map((e) => [e.name, e.default])));
  });
});
