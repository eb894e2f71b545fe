// Where the browser tests find things: the repository, the built page, the
// screenshots, and the page's own TypeScript modules as Node imports them.
import assert from "node:assert/strict";
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

const here = path.dirname(fileURLToPath(import.meta.url));
export const root = path.resolve(here, "../../..");
// ATTNKIT_WEB_DIST: the page built elsewhere (vite.config.ts reads the same variable).
export const dist = process.env.ATTNKIT_WEB_DIST ?? path.join(root, "web/dist");
export const shots = path.join(root, "tests/artifacts/screenshots");

/** Asserts the page is built and makes the screenshots' folder: every suite's first step. */
export function requireBuiltPage() {
  assert.ok(
    existsSync(path.join(dist, "index.html")),
    "web/dist is missing: run `npx vite build web` first",
  );
  mkdirSync(shots, { recursive: true });
}

/**
 * A module of the page's own source (TypeScript, `rel` from the repository's root) as Node
 * imports it: esbuild strips its types. For the page's modules that import no other.
 */
export async function pageModule(rel) {
  const { transform } = await import("esbuild");
  const { code } = await transform(readFileSync(path.resolve(root, rel), "utf8"), {
    loader: "ts",
    format: "esm",
  });
  return import(`data:text/javascript;base64,${Buffer.from(code).toString("base64")}`);
}
