// The built page (web/dist) served on 127.0.0.1: a tiny static file server, optionally
// cross-origin isolated or injecting a script (for drivers that report no console events).
import { createReadStream, existsSync, readFileSync, statSync } from "node:fs";
import { createServer } from "node:http";
import path from "node:path";

const TYPES = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript",
  ".mjs": "text/javascript",
  ".css": "text/css",
  ".wasm": "application/wasm",
  ".svg": "image/svg+xml",
  ".png": "image/png",
  ".json": "application/json",
};

/** The headers that make a page cross-origin isolated (web/vite.config.ts sends them). */
export const ISOLATION_HEADERS = {
  "cross-origin-opener-policy": "same-origin",
  "cross-origin-embedder-policy": "require-corp",
};

/**
 * Serves `root`, and the files a test hands it with `add(name, bytes)` (kept in memory,
 * resolves to their URL on this server: a page fetches a test's input from its own
 * origin); resolves to { url, add, close }. `isolated`: every answer carries
 * ISOLATION_HEADERS; `script`: inserted at the start of every HTML page's <head>.
 */
export function serve(root, { isolated = false, script = "" } = {}) {
  // The files given to add(), by their path (as the request gives it, encoded).
  const held = new Map();
  const answer = (res, status, type) =>
    res.writeHead(status, {
      ...(type && { "content-type": type }),
      "cache-control": "no-store",
      ...(isolated && ISOLATION_HEADERS),
    });
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    const bytes = held.get(url.pathname);
    if (bytes) {
      res.setHeader("content-length", String(bytes.length));
      answer(res, 200, "application/octet-stream").end(bytes);
      return;
    }
    let file = path.join(root, decodeURIComponent(url.pathname));
    if (!file.startsWith(root)) {
      answer(res, 403).end();
      return;
    }
    if (existsSync(file) && statSync(file).isDirectory()) file = path.join(file, "index.html");
    if (!existsSync(file)) {
      answer(res, 404).end("not found");
      return;
    }
    const type = TYPES[path.extname(file)] ?? "application/octet-stream";
    if (script && type.startsWith("text/html")) {
      const html = readFileSync(file, "utf8").replace("<head>", `<head><script>${script}</script>`);
      answer(res, 200, type).end(html);
      return;
    }
    createReadStream(file).pipe(answer(res, 200, type));
  });
  return new Promise((resolve) => {
    server.listen(0, "127.0.0.1", () => {
      const base = `http://127.0.0.1:${server.address().port}/`;
      resolve({
        url: base,
        add(name, data) {
          const at = `/held/${held.size + 1}/${encodeURIComponent(name)}`;
          held.set(at, data);
          return new URL(at, base).href;
        },
        close: () => {
          server.closeAllConnections?.();
          return new Promise((r) => server.close(r));
        },
      });
    });
  });
}

/**
 * Injected first into the page's <head> for drivers that report no console
 * events (classic WebDriver): records console.error / console.warn calls,
 * uncaught errors, unhandled rejections, failed resource loads, fetches
 * answered with an HTTP error and CSP violations in window.__problems.
 */
export const CONSOLE_HOOK = `(() => {
  const problems = (window.__problems = []);
  const err = (x) => (x instanceof Error ? x.name + ": " + x.message + (x.stack ? "\\n" + x.stack : "") : String(x));
  const text = (a) => a.map((x) => (x instanceof Error ? err(x) : x && typeof x === "object" ? JSON.stringify(x) : String(x))).join(" ");
  for (const level of ["error", "warn"]) {
    const orig = console[level].bind(console);
    console[level] = (...a) => { problems.push("console " + level + ": " + text(a)); orig(...a); };
  }
  addEventListener("error", (e) => {
    const t = e.target;
    if (t && t !== window && (t.src || t.href)) problems.push("failed to load: " + (t.src || t.href));
    else problems.push("page error: " + (e.error ? err(e.error) : e.message));
  }, true);
  addEventListener("unhandledrejection", (e) => problems.push("unhandled rejection: " + err(e.reason)));
  addEventListener("securitypolicyviolation", (e) => problems.push("CSP violation: " + e.violatedDirective + " " + e.blockedURI));
  const f = window.fetch.bind(window);
  window.fetch = (...a) => f(...a).then((r) => { if (!r.ok) problems.push("HTTP " + r.status + ": " + r.url); return r; });
})();`;
