// attnkit: where a checkpoint's bytes come from. A source is a Node path (a
// file, or a folder holding model.safetensors and config.json), bytes (a
// Buffer, Uint8Array or ArrayBuffer), a Blob or File, an http(s) URL, or a
// Hugging Face Hub repository id ("openai-community/gpt2", or "gpt2" alone),
// read from `{hubUrl}/{repo}/resolve/{revision}/{file}`. Each reads a byte
// range into a view the caller gives (module memory while loading: no second
// copy of the checkpoint in JS): Node reads the file into it, a Blob comes in
// slices, a URL by Range requests, the whole data of a load as one streamed
// response. Nothing is fetched until a read asks for it.
import { AttnkitError, AttnkitTypeError, describe } from "./errors.js";
import { abortError } from "./worker-wire.js";

export const DEFAULT_HUB = "https://huggingface.co";
const WEIGHTS = "model.safetensors";
const CONFIG = "config.json";
// A file on disk is read in slices of at most this many bytes.
const FILE_SLICE = 16 << 20;
// A byte stream (a response's body, a Blob's) is read into one reused buffer
// of this many bytes.
const BYOB_BYTES = 1 << 20;
// A Blob's stream that gives no bytes for this long is started again from
// where it stopped, at most BLOB_STALLS times in one read.
const BLOB_STALL_MS = 5000;
const BLOB_STALLS = 8;
// A gap between two reads of a streamed response shorter than this is read
// through; a longer one starts a new request.
const SKIP_THROUGH = 16 << 20;
// A repository id: "name" or "owner/name" (letters, digits, "-", "_", ".").
const REPO_ID = /^(?:[A-Za-z0-9][\w.-]*\/)?[A-Za-z0-9][\w.-]*$/;

/** Node's builtin `name`, or null outside Node. */
function nodeBuiltin(name) {
  const p = globalThis.process;
  if (typeof p?.getBuiltinModule === "function") return p.getBuiltinModule(name);
  if (!p?.versions?.node) return null;
  return typeof require === "function" ? require(name) : null;
}

const loadFailed = (message, cause) => {
  const e = new AttnkitError(`source: ${message}`, { code: "load_failed", parameter: "source" });
  if (cause !== undefined) e.cause = cause;
  return e;
};

/** The call's cancellation as its error. */
export function aborted(signal) {
  return abortError(
    "options.signal",
    "expected the checkpoint to load, got the load cancelled",
    signal?.reason,
  );
}

/** Throws the cancellation if `signal` is aborted. */
export function checkAborted(signal) {
  if (signal?.aborted) throw aborted(signal);
}

/** A source of bytes in memory. */
class BytesSource {
  constructor(bytes, description) {
    this.bytes = bytes;
    this.description = description;
  }
  async start() {
    return { first: this.bytes.subarray(0, 8), total: this.bytes.length };
  }
  async read(begin, view, { onBytes } = {}) {
    view.set(this.bytes.subarray(begin, begin + view.length));
    onBytes?.(view.length);
  }
  async config() {
    return null;
  }
  close() {}
}

/**
 * The bytes of a stream (a response's body, a Blob's) chunk by chunk: through
 * a BYOB reader into one reused buffer where it is a byte stream (fetch's
 * bodies and Blob streams in Chromium, Firefox and Node), so that a long
 * read leaves no chunks behind for the collector; else the default reader's
 * chunks.
 */
class ChunkReader {
  /**
   * `spare`: a buffer of BYOB_BYTES an earlier reader handed back (see
   * `spare()`), so that a source read in many slices reuses one buffer
   * instead of leaving one per slice for the collector.
   */
  constructor(stream, spare = null) {
    try {
      this.reader = stream.getReader({ mode: "byob" });
      this.buffer = spare?.byteLength === BYOB_BYTES ? spare : new ArrayBuffer(BYOB_BYTES);
    } catch {
      this.reader = stream.getReader();
      this.buffer = null;
    }
  }
  /**
   * The next chunk, or null at the stream's end: at most `max` bytes from
   * the BYOB reader (valid until the next call), any length from the default one.
   */
  async next(max) {
    if (!this.buffer) {
      const { value, done } = await this.reader.read();
      return done ? null : value;
    }
    const size = Math.min(max, this.buffer.byteLength);
    const { value, done } = await this.reader.read(new Uint8Array(this.buffer, 0, size));
    if (value) this.buffer = value.buffer; // the same memory, handed back
    return done ? null : value;
  }
  cancel() {
    return this.reader.cancel();
  }
  /** The buffer for the next reader, once this one is done; null if a read still holds it. */
  spare() {
    return this.buffer?.byteLength === BYOB_BYTES ? this.buffer : null;
  }
}

const STALLED = Symbol("stalled");

/** `promise`'s value, or STALLED if it has not settled within `ms`. */
async function settleWithin(promise, ms) {
  let timer;
  const late = new Promise((resolve) => {
    timer = setTimeout(() => resolve(STALLED), ms);
  });
  try {
    return await Promise.race([promise, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** A Blob or File, its slices streamed. */
class BlobSource {
  constructor(blob) {
    this.blob = blob;
    this.description = { kind: "blob", name: typeof blob.name === "string" ? blob.name : null };
    this.spare = null;
  }
  async start() {
    const first = new Uint8Array(await this.blob.slice(0, 8).arrayBuffer());
    return { first, total: this.blob.size };
  }
  async read(begin, view, { signal, onBytes } = {}) {
    // Chromium's stream of a large file's Blob now and then stops giving
    // bytes partway, its read never settling: a read with no bytes for
    // BLOB_STALL_MS is given up and the rest of the slice streamed anew.
    for (let at = 0, stalls = 0; at < view.length;) {
      const stream = this.blob.slice(begin + at, begin + view.length).stream();
      const chunks = new ChunkReader(stream, this.spare);
      this.spare = null;
      try {
        while (at < view.length) {
          checkAborted(signal);
          const chunk = await settleWithin(chunks.next(view.length - at), BLOB_STALL_MS);
          if (chunk === STALLED) break;
          if (!chunk) {
            throw loadFailed(`expected ${view.length} bytes at ${begin} of the Blob, got ${at}`);
          }
          const n = Math.min(chunk.length, view.length - at);
          writeInto(view, at, chunk.subarray(0, n));
          at += n;
          onBytes?.(n);
        }
      } finally {
        chunks.cancel().catch(() => {});
        this.spare = chunks.spare();
      }
      if (at < view.length && ++stalls > BLOB_STALLS) {
        throw loadFailed(
          `expected the Blob's bytes from ${begin + at}, got none for ${BLOB_STALL_MS / 1e3} s, ${stalls} times`,
        );
      }
    }
  }
  async config() {
    return null;
  }
  close() {
    this.spare = null;
  }
}

/**
 * Writes `bytes` into `view` at `at`; a view whose memory moved (another call
 * grew the module's memory during the load) cannot be written.
 */
function writeInto(view, at, bytes) {
  if (view.byteLength === 0 && bytes.length > 0) {
    throw new AttnkitError(
      "source: expected the module's memory to stay put while a checkpoint loads, got it grown " +
        "by another call (wait for openCheckpoint before other calls on the module)",
      { code: "load_failed", parameter: "source" },
    );
  }
  view.set(bytes, at);
}

/** A file on disk (Node), read into the caller's views. */
class FileSource {
  constructor(path, configPath) {
    this.path = path;
    this.configPath = configPath;
    this.description = { kind: "file", path };
    this.handle = null;
  }
  async start() {
    const fs = nodeBuiltin("node:fs");
    try {
      this.handle = await fs.promises.open(this.path, "r");
    } catch (e) {
      throw loadFailed(`expected a readable file at ${this.path}, got ${e.code ?? e.message}`, e);
    }
    const { size } = await this.handle.stat();
    const first = new Uint8Array(Math.min(8, size));
    await this.read(0, first);
    return { first, total: size };
  }
  async read(begin, view, { signal, onBytes } = {}) {
    for (let at = 0; at < view.length;) {
      checkAborted(signal);
      const n = Math.min(FILE_SLICE, view.length - at);
      const { bytesRead } = await this.handle.read(view, at, n, begin + at);
      if (bytesRead === 0) {
        throw loadFailed(`expected ${view.length} bytes at ${begin} of ${this.path}, got its end`);
      }
      at += bytesRead;
      onBytes?.(bytesRead);
    }
  }
  async config() {
    if (!this.configPath) return null;
    const fs = nodeBuiltin("node:fs");
    let text;
    try {
      text = await fs.promises.readFile(this.configPath, "utf8");
    } catch (e) {
      if (e.code === "ENOENT") return null;
      throw loadFailed(`expected a readable ${this.configPath}, got ${e.code ?? e.message}`, e);
    }
    return parseConfig(text, this.configPath);
  }
  close() {
    this.handle?.close().catch(() => {});
    this.handle = null;
  }
}

/** config.json's text as an object; `where` names it in the error. */
function parseConfig(text, where) {
  try {
    return JSON.parse(text);
  } catch (e) {
    throw new AttnkitError(`config.json: expected JSON (${where}), got ${e.message}`, {
      parameter: "config.json",
    });
  }
}

/**
 * fetch(url, init) for an idempotent request (GET or HEAD): a network error
 * before any response is tried once more. A server may close an idle
 * keep-alive connection just as the next request goes out on it (the request
 * then fails with ECONNRESET or "other side closed", though the server is up):
 * the second try opens a new connection. A cancellation is never retried.
 */
async function fetchIdempotent(url, init, signal) {
  try {
    return await fetch(url, { ...init, signal });
  } catch (e) {
    if (signal?.aborted) throw e;
    return await fetch(url, { ...init, signal });
  }
}

/** The [begin, end, total] of a Content-Range header "bytes a-b/total", or null. */
function contentRange(header) {
  const m = /^bytes (\d+)-(\d+)\/(\d+|\*)$/.exec(header ?? "");
  return m ? [Number(m[1]), Number(m[2]) + 1, m[3] === "*" ? null : Number(m[3])] : null;
}

/**
 * A file over HTTP(S), read by Range requests. The load's reads, one after
 * another through the data, share one streamed response (`streamTo` says how
 * far to ask); a read elsewhere starts a new one.
 */
class HttpFile {
  constructor(url) {
    this.url = url;
    this.total = null;
    this.stream = null; // {reader, at, end, rest}
    this.streamTo = null;
  }

  /** Fetches `url` with `init`; a network error or a status not OK is a load_failed error naming it. */
  async fetch(init, signal) {
    let response;
    try {
      response = await fetchIdempotent(this.url, init, signal);
    } catch (e) {
      if (signal?.aborted) throw aborted(signal);
      throw loadFailed(
        `expected a response from ${this.url}, got ${e.cause?.message ?? e.message}`,
        e,
      );
    }
    if (response.status === 416) {
      throw loadFailed(
        `expected ${init.headers?.range} of ${this.url}, got HTTP 416 (the file is shorter)`,
      );
    }
    if (!response.ok) {
      response.body?.cancel().catch(() => {});
      throw loadFailed(
        `expected ${this.url} to answer, got HTTP ${response.status}${response.statusText ? ` ${response.statusText}` : ""}`,
      );
    }
    return response;
  }

  /** The file's size from a HEAD request's Content-Length. */
  async headSize(signal) {
    const response = await this.fetch({ method: "HEAD" }, signal);
    const length = response.headers.get("content-length");
    if (length === null) {
      throw loadFailed(
        `expected ${this.url} to give its size (Content-Range or Content-Length), got neither`,
      );
    }
    return Number(length);
  }

  /**
   * A response to bytes [begin, end), checked: a 206 whose Content-Range is
   * the range asked for (a 200 is the whole file), a Content-Length that
   * agrees, the same total as before. A 206 whose Content-Range a browser
   * hides (a cross-origin server that does not expose it) takes the size
   * from a HEAD request. Returns {reader, skip} (skip: bytes to drop first,
   * for a 200).
   */
  async request(begin, end, signal) {
    const response = await this.fetch({ headers: { range: `bytes=${begin}-${end - 1}` } }, signal);
    const refuse = (message) => {
      response.body?.cancel().catch(() => {});
      return loadFailed(message);
    };
    const length = response.headers.get("content-length");
    const rangeHeader = response.headers.get("content-range");
    let total, skip, body;
    if (response.status === 206 && rangeHeader === null) {
      total = this.total ?? (await this.headSize(signal));
      skip = 0;
      body = Math.min(end, total) - begin;
    } else if (response.status === 206) {
      const range = contentRange(rangeHeader);
      total = range?.[2] ?? null;
      // The range asked for, or fewer bytes only where the file ends.
      const inside = range && (total === null || range[1] <= total);
      if (!inside || range[0] !== begin || (range[1] !== end && range[1] !== total)) {
        throw refuse(
          `expected bytes ${begin}-${end - 1} of ${this.url}, got Content-Range ${describe(rangeHeader)}`,
        );
      }
      skip = 0;
      body = range[1] - range[0];
    } else {
      total = length === null ? null : Number(length);
      skip = begin;
      body = total;
    }
    if (length !== null && body !== null && Number(length) !== body) {
      throw refuse(
        `expected a Content-Length of ${body} from ${this.url} (the range's), got ${length}`,
      );
    }
    if (total === null) {
      throw refuse(
        `expected ${this.url} to give its size (Content-Range or Content-Length), got neither`,
      );
    }
    if (this.total !== null && total !== this.total) {
      throw refuse(
        `expected ${this.url} to hold ${this.total} bytes as before, got ${total} (it changed)`,
      );
    }
    this.total = total;
    return { reader: new ChunkReader(response.body), skip };
  }

  /** The first 8 bytes (fewer if the file is smaller) and the file's size. */
  async start(signal) {
    const { reader, skip } = await this.request(0, 8, signal);
    const want = Math.min(8, this.total);
    const first = new Uint8Array(want);
    const stream = { reader, at: 0 - skip, end: want, rest: null };
    await this.pull(stream, first, 0, signal);
    reader.cancel().catch(() => {});
    return { first, total: this.total };
  }

  /** Fills view[at ..] from `stream` (drops what lies before stream.at reaches 0 offset). */
  async pull(stream, view, at, signal, onBytes, base = 0) {
    // stream.at: the file offset of the next byte the reader gives (minus a skip).
    while (at < view.length) {
      let chunk = stream.rest;
      stream.rest = null;
      if (!chunk) {
        // At most what this read still wants: a skip's bytes, else the view's.
        const want = stream.at < base ? base - stream.at : view.length - at;
        try {
          chunk = await stream.reader.next(want);
        } catch (e) {
          if (signal?.aborted) throw aborted(signal);
          throw loadFailed(
            `expected ${view.length - at} more bytes of ${this.url}, got the connection cut (${e.cause?.message ?? e.message})`,
            e,
          );
        }
        if (!chunk) {
          throw loadFailed(
            `expected ${view.length - at} more bytes of ${this.url} (byte ${base + at} of ${this.total}), got the end of the response`,
          );
        }
      }
      if (stream.at < base) {
        // Bytes before the read's start (a 200's prefix, a skipped gap).
        const drop = Math.min(chunk.length, base - stream.at);
        stream.at += drop;
        chunk = chunk.subarray(drop);
        if (chunk.length === 0) continue;
      }
      const n = Math.min(chunk.length, view.length - at);
      writeInto(view, at, chunk.subarray(0, n));
      if (n < chunk.length) stream.rest = chunk.subarray(n);
      at += n;
      stream.at += n;
      onBytes?.(n);
    }
  }

  /** Fills `view` with bytes [begin, begin + view.length). */
  async read(begin, view, { signal, onBytes } = {}) {
    checkAborted(signal);
    const end = begin + view.length;
    let s = this.stream;
    if (!s || begin < s.at || begin - s.at > SKIP_THROUGH || end > s.end) {
      this.closeStream();
      const to = Math.max(end, Math.min(this.streamTo ?? end, this.total ?? end));
      const { reader, skip } = await this.request(begin, to, signal);
      s = this.stream = { reader, at: begin - skip, end: to, rest: null };
    }
    await this.pull(s, view, 0, signal, onBytes, begin);
  }

  closeStream() {
    this.stream?.reader.cancel().catch(() => {});
    this.stream = null;
  }
}

/** A checkpoint at a URL: its config.json beside it, when there is one. */
class UrlSource {
  constructor(url, configUrl, description) {
    this.file = new HttpFile(url);
    this.configUrl = configUrl;
    this.description = description;
  }
  start(signal) {
    return this.file.start(signal);
  }
  read(begin, view, options) {
    return this.file.read(begin, view, options);
  }
  /** Reads through to `end` in one streamed response (a load's data). */
  streamTo(end) {
    this.file.streamTo = end;
  }
  async config(signal) {
    if (!this.configUrl) return null;
    let response;
    try {
      response = await fetchIdempotent(this.configUrl, {}, signal);
    } catch (e) {
      if (signal?.aborted) throw aborted(signal);
      throw loadFailed(
        `expected a response from ${this.configUrl}, got ${e.cause?.message ?? e.message}`,
        e,
      );
    }
    if (response.status === 404 && this.description.kind === "url") return null;
    if (!response.ok) {
      throw loadFailed(`expected ${this.configUrl} to answer, got HTTP ${response.status}`);
    }
    return parseConfig(await response.text(), this.configUrl);
  }
  close() {
    this.file.closeStream();
  }
}

/** A local path's files (Node): a folder with model.safetensors, or a .safetensors file. */
function fileSource(path) {
  const fs = nodeBuiltin("node:fs");
  const pathModule = nodeBuiltin("node:path");
  if (!fs) {
    throw new AttnkitTypeError(
      `source: expected a Blob, File, bytes, URL or Hub repository id (a path is read only in Node), got ${describe(path)}`,
      { parameter: "source" },
    );
  }
  const p = path.startsWith("file:") ? nodeBuiltin("node:url").fileURLToPath(path) : path;
  let isFolder = false;
  try {
    isFolder = fs.statSync(p).isDirectory();
  } catch {
    // Not there: start() names it.
  }
  const file = isFolder ? pathModule.join(p, WEIGHTS) : p;
  return new FileSource(file, pathModule.join(pathModule.dirname(file), CONFIG));
}

/** Whether a string names a local path rather than a repository id. */
function looksLikePath(s) {
  if (/^(\.{1,2}[\\/]|[\\/]|~|[A-Za-z]:[\\/]|file:)/.test(s) || s.includes("\\")) return true;
  if (/\.(safetensors|json)$/.test(s) || s.split("/").length > 2) return true;
  // A folder or file of that name here (e.g. a checkpoint downloaded as "gpt2/").
  const fs = nodeBuiltin("node:fs");
  return fs ? fs.existsSync(s) : false;
}

/** The URL options: hubUrl (default huggingface.co) and revision (default "main"). */
function hubOptions(options) {
  const hub = options.hubUrl ?? DEFAULT_HUB;
  if (typeof hub !== "string" || !/^https?:\/\//.test(hub)) {
    throw new AttnkitTypeError(
      `options.hubUrl: expected an http(s) URL string, got ${describe(hub)}`,
      { parameter: "options.hubUrl" },
    );
  }
  const revision = options.revision ?? "main";
  if (typeof revision !== "string" || revision === "") {
    throw new AttnkitTypeError(
      `options.revision: expected a branch, tag or commit string, got ${describe(revision)}`,
      { parameter: "options.revision" },
    );
  }
  return { hub: hub.replace(/\/+$/, ""), revision };
}

/**
 * The source of `source` (see the top of this file), with `options`
 * {hubUrl, revision}: {description, start(signal) -> {first, total},
 * read(begin, view, {signal, onBytes}), config(signal) -> object | null,
 * streamTo?(end), close()}.
 */
export function checkpointSource(source, options = {}) {
  if (typeof source === "string") {
    if (/^https?:\/\//i.test(source)) {
      const url = new URL(source);
      const configUrl = url.pathname.endsWith(".safetensors") ? new URL(CONFIG, url).href : null;
      return new UrlSource(url.href, configUrl, { kind: "url", url: url.href });
    }
    if (!looksLikePath(source) && REPO_ID.test(source)) {
      const { hub, revision } = hubOptions(options);
      const base = `${hub}/${source}/resolve/${encodeURIComponent(revision)}/`;
      return new UrlSource(base + WEIGHTS, base + CONFIG, {
        kind: "hub",
        repo: source,
        revision,
        url: base + WEIGHTS,
      });
    }
    return fileSource(source);
  }
  if (typeof Blob !== "undefined" && source instanceof Blob) return new BlobSource(source);
  if (source instanceof ArrayBuffer)
    return new BytesSource(new Uint8Array(source), { kind: "bytes" });
  if (source instanceof Uint8Array) return new BytesSource(source, { kind: "bytes" });
  if (source instanceof URL) return checkpointSource(source.href, options);
  throw new AttnkitTypeError(
    `source: expected a path, URL, Hub repository id, Blob/File, Uint8Array or ArrayBuffer, got ${describe(source)}`,
    { parameter: "source" },
  );
}
