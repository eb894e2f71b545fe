// Builds the static page into web/dist (relative paths: any static host can serve it).
// "attnkit" resolves to the repository root, i.e. through package.json "exports",
// exactly as an npm user's bundler resolves the published package.
// ATTNKIT_PKG may point at another package folder (e.g. an unpacked `npm pack` tarball);
// ATTNKIT_WEB_DIST at another output folder (parallel builds of work in progress).
import path from "node:path";
import { fileURLToPath } from "node:url";
import { defineConfig } from "vite";

const here = path.dirname(fileURLToPath(import.meta.url));

export default defineConfig({
  root: here,
  base: "./",
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
  preview: { host: "127.0.0.1", port: 4173 },
  server: { host: "127.0.0.1" },
});
