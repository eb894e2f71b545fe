// The built page served cross-origin isolated (the COOP/COEP headers npm start's preview
// sends), and a copy of the page built with its service worker
// (ATTNKIT_WEB_SW=1), for tests/browser/threads.test.mjs.
import { execFileSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { root } from "./paths.mjs";
import { serve } from "./server.mjs";

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
