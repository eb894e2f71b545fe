// The page's modules import each other without a cycle, type imports included: a
// module that needs something of a module above it gets it injected (the Train
// view's redraw), and types two modules share live in a module below both, so
// that each file can be read, and loaded, after what it imports.
import assert from "node:assert/strict";
import { readFileSync, readdirSync } from "node:fs";
import path from "node:path";
import { test } from "node:test";
import { root } from "./lib/paths.mjs";

const src = path.join(root, "web/src");

/** Every .ts file under dir, as paths relative to src. */
function sources(dir) {
  return readdirSync(dir, { withFileTypes: true }).flatMap((e) => {
    const full = path.join(dir, e.name);
    if (e.isDirectory()) return sources(full);
    return e.name.endsWith(".ts") && !e.name.endsWith(".d.ts") ? [path.relative(src, full)] : [];
  });
}

/** The relative modules a file imports or re-exports from, type-only ones included. */
function imports(file) {
  const text = readFileSync(path.join(src, file), "utf8");
  const found = [];
  for (const m of text.matchAll(/^\s*(?:import|export)\s+[^;]*?from\s+"(\.[^"]+)"/gms)) {
    found.push(path.normalize(path.join(path.dirname(file), m[1])) + ".ts");
  }
  return found;
}

test("web/src has no import cycle, type imports included", () => {
  const files = sources(src);
  const graph = new Map(files.map((f) => [f, imports(f).filter((i) => files.includes(i))]));
  assert.ok(graph.size > 30, `${graph.size} modules read`);
  const state = new Map(); // 1: on the current path, 2: done
  const cycles = [];
  const visit = (file, trail) => {
    if (state.get(file) === 2) return;
    if (state.get(file) === 1) {
      cycles.push([...trail.slice(trail.indexOf(file)), file].join(" -> "));
      return;
    }
    state.set(file, 1);
    for (const next of graph.get(file)) visit(next, [...trail, file]);
    state.set(file, 2);
  };
  for (const file of files) visit(file, []);
  assert.deepEqual(cycles, [], "import cycles");
});
