// Builds the static page into web/dist (relative paths: any static host can serve it).
// "attnkit" resolves to the repository root, i.e. through package.json "exports",
// exactly as an npm user's bundler resolves the published package.
// ATTNKIT_PKG may point at another package folder (e.g. an unpacked `npm pack` tarball);
// ATTNKIT_WEB_DIST at another output folder (parallel builds of work in progress);
// ATTNKIT_WEB_SW=1 adds the service worker that isolates the page on a static host that
// sends no headers (sw/, docs/page.md "Threads").
import { readFileSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { defineConfig, type Plugin } from "vite";

const here = path.dirname(fileURLToPath(import.meta.url));

// What makes the page cross-origin isolated (SharedArrayBuffer, hence the training workers'
// threads): sent by `npm start`'s preview and the dev server.
const ISOLATION_HEADERS = {
  "Cross-Origin-Opener-Policy": "same-origin",
  "Cross-Origin-Embedder-Policy": "require-corp",
};

/** sw/coi-sw.js and sw/coi-register.js in the build, the second loaded first by the page. */
function isolatingServiceWorker(): Plugin {
  const files = ["coi-sw.js", "coi-register.js"];
  return {
    name: "attnkit-coi-service-worker",
    apply: "build",
    generateBundle() {
      for (const fileName of files) {
        const source = readFileSync(path.join(here, "sw", fileName), "utf8");
        this.emitFile({ type: "asset", fileName, source });
      }
    },
    transformIndexHtml: () => [
      { tag: "script", attrs: { src: "./coi-register.js" }, injectTo: "head-prepend" },
    ],
  };
}

export default defineConfig({
  root: here,
  base: "./",
  plugins: process.env.ATTNKIT_WEB_SW === "1" ? [isolatingServiceWorker()] : [],
  resolve: {
    alias: { attnkit: process.env.ATTNKIT_PKG ?? path.resolve(here, "..") },
  },
  build: {
    outDir: process.env.ATTNKIT_WEB_DIST ?? path.resolve(here, "dist"),
    emptyOutDir: true,
    target: "es2022",
    chunkSizeWarningLimit: 1024,
  },
  // The workers are module workers (new Worker(url, { type: "module" })): ES modules, so
  // that what they import on demand (GPT-2's tokenizer) splits into chunks of its own.
  worker: { format: "es" },
  preview: { host: "127.0.0.1", port: 4173, headers: ISOLATION_HEADERS },
  server: { host: "127.0.0.1", headers: ISOLATION_HEADERS },
});
