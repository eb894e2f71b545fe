// The built page served cross-origin isolated (the COOP/COEP headers npm start's preview
// sends) in front of serve(), and a copy of the page built with its service worker
// (ATTNKIT_WEB_SW=1), for tests/browser/threads.test.mjs.
import { execFileSync } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { createServer } from "node:http";
import { tmpdir } from "node:os";
import path from "node:path";
import { root } from "./paths.mjs";
import { serve } from "./server.mjs";

/** The headers that make a page cross-origin isolated (web/vite.config.ts sends them). */
export const ISOLATION_HEADERS = {
  "cross-origin-opener-policy": "same-origin",
  "cross-origin-embedder-policy": "require-corp",
};

/** serve(`dir`) with the isolation headers on every answer; resolves to { url, close }. */
export async function serveIsolated(dir) {
  const inner = await serve(dir);
  const outer = createServer(async (req, res) => {
    try {
      const r = await fetch(new URL(req.url ?? "/", inner.url));
      const type = r.headers.get("content-type") ?? "application/octet-stream";
      const body = Buffer.from(await r.arrayBuffer());
      res
        .writeHead(r.status, {
          "content-type": type,
          "cache-control": "no-store",
          ...ISOLATION_HEADERS,
        })
        .end(body);
    } catch (e) {
      res.writeHead(502).end(String(e));
    }
  });
  await new Promise((r) => outer.listen(0, "127.0.0.1", r));
  return {
    url: `http://127.0.0.1:${outer.address().port}/`,
    close: async () => {
      outer.closeAllConnections?.();
      await new Promise((r) => outer.close(r));
      await inner.close();
    },
  };
}

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
