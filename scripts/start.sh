#!/usr/bin/env bash
# npm start: builds what is missing and (from issue #4 on) serves the web page.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/setup.sh
bash scripts/build.sh native
cat <<'MSG'

attnkit: the native core is built (build/native).
The step-by-step web page arrives with the web page work (issue #4); until
then, `npm test` builds every variant and runs every suite.
MSG
