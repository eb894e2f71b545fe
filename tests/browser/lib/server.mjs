// The built page (web/dist) served on 127.0.0.1: a tiny static file server, and the same
// behind a pass-through that injects a script (for drivers that report no console events).
import { createReadStream, existsSync, statSync } from "node:fs";
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

/**
 * Serves `root`, and the files a test hands it with `add(name, bytes)` (kept in memory,
 * resolves to their URL on this server: a page fetches a test's input from its own
 * origin); resolves to { url, add, close }. Port 0 = any free port.
 */
export function serve(root, port = 0) {
  // The files given to add(), by their path (as the request gives it, encoded).
  const held = new Map();
  const server = createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://127.0.0.1");
    const bytes = held.get(url.pathname);
    if (bytes) {
      res.writeHead(200, {
        "content-type": "application/octet-stream",
        "content-length": String(bytes.length),
        "cache-control": "no-store",
      });
      res.end(bytes);
      return;
    }
    let file = path.join(root, decodeURIComponent(url.pathname));
    if (!file.startsWith(root)) {
      res.writeHead(403).end();
      return;
    }
    if (existsSync(file) && statSync(file).isDirectory()) file = path.join(file, "index.html");
    if (!existsSync(file)) {
      res.writeHead(404).end("not found");
      return;
    }
    res.writeHead(200, {
      "content-type": TYPES[path.extname(file)] ?? "application/octet-stream",
      "cache-control": "no-store",
    });
    createReadStream(file).pipe(res);
  });
  return new Promise((resolve) => {
    server.listen(port, "127.0.0.1", () => {
      const { port: p } = server.address();
      const base = `http://127.0.0.1:${p}/`;
      resolve({
        url: base,
        add(name, data) {
          const at = `/held/${held.size + 1}/${encodeURIComponent(name)}`;
          held.set(at, data);
          return new URL(at, base).href;
        },
        close: () => new Promise((r) => server.close(r)),
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

/**
 * serve() behind a pass-through server that inserts `script` at
 * the start of every HTML page's <head>. Resolves to { url, add, close }.
 */
export async function serveWithScript(dir, script) {
  const inner = await serve(dir);
  const outer = createServer(async (req, res) => {
    try {
      const r = await fetch(new URL(req.url ?? "/", inner.url));
      const type = r.headers.get("content-type") ?? "application/octet-stream";
      let body = Buffer.from(await r.arrayBuffer());
      if (type.startsWith("text/html"))
        body = Buffer.from(
          body.toString("utf8").replace("<head>", `<head><script>${script}</script>`),
        );
      res.writeHead(r.status, { "content-type": type, "cache-control": "no-store" }).end(body);
    } catch (e) {
      res.writeHead(502).end(String(e));
    }
  });
  await new Promise((r) => outer.listen(0, "127.0.0.1", r));
  const url = `http://127.0.0.1:${outer.address().port}/`;
  return {
    url,
    // Served through this server, as every other file.
    add: (name, data) => new URL(new URL(inner.add(name, data)).pathname, url).href,
    close: async () => {
      outer.closeAllConnections?.();
      await new Promise((r) => outer.close(r));
      await inner.close();
    },
  };
}
