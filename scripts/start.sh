#!/usr/bin/env bash
# npm start: installs what is missing, builds what is missing or stale (the
# npm package in dist/, the page in web/dist/), then serves the page and
# prints its URL. PORT overrides the port (default 4173).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
if [[ ! -f dist/attnkit.mjs ]] || [[ -n $(find src CMakeLists.txt -newer dist/attnkit.mjs -print -quit) ]]; then
  bash scripts/build.sh package
fi
npx vite build web --logLevel warn
echo "attnkit: serving the step-by-step attention page (Ctrl-C to stop)"
exec npx vite preview web --host 127.0.0.1 --port "${PORT:-4173}" --strictPort
