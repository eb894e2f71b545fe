// attnkit: the package's version (package.json), set by the build (esbuild --define).
export const version = typeof __ATTNKIT_VERSION__ === "string" ? __ATTNKIT_VERSION__ : "0.0.0-dev";
