// A local stand-in of the Hugging Face Hub for the tests (never the real one):
// `{hub}/{repo}/resolve/{revision}/{file}` answers with a 302 to
// `{cdn}/cdn/{repo}/{revision}/{file}`, which serves the bytes and honours
// `Range` (206 with Content-Range), with CORS headers as the Hub's CDN sends,
// so that a page on another origin can fetch from it. Faults per file make the
// failures a download meets: a status, a connection cut mid-body, fewer bytes
// than the range, a Content-Range that lies. Every request is logged and the
// body bytes served are counted per file.
//
//   const hub = await startHub();
//   hub.add("owner/tiny", { "config.json": bytes, "model.safetensors": bytes });
//   hub.fault("owner/tiny", "model.safetensors", { cutAfter: 100 });
//   fetch(`${hub.url}/owner/tiny/resolve/main/config.json`) ...
//   hub.served("owner/tiny", "model.safetensors")  // body bytes sent so far
//   await hub.close();
import http from "node:http";

const CORS = {
  "access-control-allow-origin": "*",
  "access-control-expose-headers":
    "content-range, content-length, accept-ranges, etag, x-linked-size, x-error-code",
};

/** The [begin, end) of a `Range: bytes=a-b` (or `a-`, `-n`) header over `size` bytes, or null. */
function parseRange(header, size) {
  const m = /^bytes=(\d*)-(\d*)$/.exec(header ?? "");
  if (!m || (m[1] === "" && m[2] === "")) return null;
  if (m[1] === "") return [Math.max(0, size - Number(m[2])), size];
  const begin = Number(m[1]);
  const end = m[2] === "" ? size : Math.min(size, Number(m[2]) + 1);
  return begin < end ? [begin, end] : "unsatisfiable";
}

/**
 * Starts the stand-in on a free port of `host`. Options: `cdnHost`, the
 * host the redirects point to (default: the same host; "localhost" against
 * "127.0.0.1" makes them cross-origin). Returns {url, cdnUrl, add, fault,
 * served, requests, reset, close}.
 */
export async function startHub({ host = "127.0.0.1", cdnHost } = {}) {
  // repo -> revision -> file -> bytes; faults by "repo/revision/file".
  const repos = new Map();
  const faults = new Map();
  const served = new Map();
  const requests = [];
  const key = (repo, revision, file) => `${repo}@${revision}/${file}`;

  function lookup(repo, revision, file) {
    return repos.get(repo)?.get(revision)?.[file];
  }

  function notFound(res, what) {
    res.writeHead(404, { ...CORS, "content-type": "text/plain", "x-error-code": "EntryNotFound" });
    res.end(`${what} not found`);
  }

  function resolve(req, res, repo, revision, file) {
    const fault = faults.get(key(repo, revision, file)) ?? {};
    if (fault.status) {
      res.writeHead(fault.status, { ...CORS, "content-type": "text/plain" });
      res.end(`status ${fault.status}`);
      return;
    }
    const bytes = lookup(repo, revision, file);
    if (!bytes) return notFound(res, `${repo}/${file}@${revision}`);
    const location = `${hub.cdnUrl}/cdn/${repo}/${encodeURIComponent(revision)}/${file}`;
    res.writeHead(302, { ...CORS, location, "x-linked-size": String(bytes.length) });
    res.end();
  }

  // Requests served per connection, to tell a reused keep-alive connection.
  const servedOn = new WeakMap();

  function cdn(req, res, repo, revision, file) {
    const bytes = lookup(repo, revision, file);
    if (!bytes) return notFound(res, `${repo}/${file}@${revision}`);
    const fault = faults.get(key(repo, revision, file)) ?? {};
    if (fault.dropReused > 0 && servedOn.get(req.socket) > 1) {
      // The server closed this idle keep-alive connection as the request came.
      fault.dropReused -= 1;
      requests[requests.length - 1].dropped = true;
      req.socket.destroy();
      return;
    }
    const size = bytes.length;
    const range = fault.ignoreRange ? null : parseRange(req.headers.range, size);
    if (range === "unsatisfiable") {
      res.writeHead(416, { ...CORS, "content-range": `bytes */${size}` });
      res.end();
      return;
    }
    const [begin, end] = range ?? [0, size];
    // A wrong length: fewer bytes than the range, with a Content-Length
    // that agrees with them and a Content-Range that does not.
    const sentEnd = Math.max(begin, end - (fault.shortBy ?? 0));
    const headers = {
      ...CORS,
      "accept-ranges": "bytes",
      "content-type": "application/octet-stream",
      "content-length": String(sentEnd - begin),
      etag: `"${size}"`,
    };
    if (range && !fault.hideContentRange)
      headers["content-range"] = fault.contentRange ?? `bytes ${begin}-${end - 1}/${size}`;
    res.writeHead(range ? 206 : 200, headers);
    if (req.method === "HEAD") return res.end();
    let body = bytes.subarray(begin, sentEnd);
    const cut = fault.cutAfter !== undefined && fault.cutAfter < body.length;
    const stall = fault.stallAfter !== undefined && fault.stallAfter < body.length;
    if (cut) body = body.subarray(0, fault.cutAfter);
    if (stall) body = body.subarray(0, fault.stallAfter);
    const k = key(repo, revision, file);
    served.set(k, (served.get(k) ?? 0) + body.length);
    if (cut) {
      // The headers promised more: the connection ends mid-body.
      res.write(body, () => res.socket.destroy());
      return;
    }
    if (stall) {
      // The rest never comes, until the client gives up.
      res.write(body);
      req.on("close", () => res.destroy());
      return;
    }
    res.end(body);
  }

  const server = http.createServer((req, res) => {
    const url = new URL(req.url, "http://x");
    const path = decodeURIComponent(url.pathname);
    requests.push({ method: req.method, path, range: req.headers.range ?? null });
    servedOn.set(req.socket, (servedOn.get(req.socket) ?? 0) + 1);
    if (req.method === "OPTIONS") {
      res.writeHead(204, {
        ...CORS,
        "access-control-allow-methods": "GET, HEAD, OPTIONS",
        "access-control-allow-headers": "range, content-type",
      });
      res.end();
      return;
    }
    // /{owner}/{name}/resolve/{rev}/{file}, or /{name}/resolve/{rev}/{file}.
    const hubPath = /^\/((?:[^/]+\/)?[^/]+)\/resolve\/([^/]+)\/(.+)$/.exec(path);
    const cdnPath = /^\/cdn\/((?:[^/]+\/)?[^/]+)\/([^/]+)\/(.+)$/.exec(path);
    if (cdnPath) return cdn(req, res, cdnPath[1], cdnPath[2], cdnPath[3]);
    if (hubPath) return resolve(req, res, hubPath[1], hubPath[2], hubPath[3]);
    notFound(res, path);
  });
  await new Promise((ok) => server.listen(0, host, ok));
  const { port } = server.address();
  const hub = {
    url: `http://${host}:${port}`,
    cdnUrl: `http://${cdnHost ?? host}:${port}`,
    /** Adds (or replaces) `repo`'s files at `revision`: {name: Uint8Array}. */
    add(repo, files, { revision = "main" } = {}) {
      if (!repos.has(repo)) repos.set(repo, new Map());
      repos.get(repo).set(revision, { ...files });
      return hub;
    },
    /**
     * A fault for one file (null removes it): {status} (the resolve URL
     * answers it), {cutAfter: n} (the body stops after n bytes and the
     * connection closes), {stallAfter: n} (the body stops after n bytes and
     * the connection stays open: a download to cancel), {shortBy: n} (n bytes fewer than asked), {contentRange:
     * "bytes a-b/size"} (a Content-Range that lies), {hideContentRange: true} (a
     * 206 without it, as a browser sees a server that does not expose it),
     * {ignoreRange: true}, {dropReused: n} (the next n requests for it
     * that arrive on a connection that served one before find it closed: the
     * race of a server closing an idle keep-alive connection).
     */
    fault(repo, file, fault, { revision = "main" } = {}) {
      if (fault) faults.set(key(repo, revision, file), fault);
      else faults.delete(key(repo, revision, file));
      return hub;
    },
    /** Body bytes served of one file so far. */
    served: (repo, file, { revision = "main" } = {}) => served.get(key(repo, revision, file)) ?? 0,
    /** Every request so far: {method, path, range, dropped (dropReused)}. */
    requests,
    /** Forgets the counts, the log and the faults (the files stay). */
    reset() {
      served.clear();
      faults.clear();
      requests.length = 0;
    },
    close: () =>
      new Promise((ok) => {
        server.closeAllConnections?.();
        server.close(() => ok());
      }),
  };
  return hub;
}
