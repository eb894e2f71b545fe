#!/usr/bin/env bash
# The formatting of the sources: clang-format (.clang-format) for the C++ of
# src/, tests/, bench/native, bench/wasm and examples, Prettier (.prettierrc) for the JS and TS of
# src/js, tests/js, tests/browser (and tests/*.mjs), web, bench, scripts and examples.
# Usage: scripts/format.sh            rewrites the files in place
#        scripts/format.sh --check    changes nothing; lists the files that
#                                     differ and fails if there are any
set -euo pipefail
cd "$(dirname "$0")/.."
check=0
case "${1:-}" in
  --check) check=1 ;;
  "") ;;
  *) echo "format: unknown argument '$1' (--check, or nothing to rewrite)" >&2; exit 2 ;;
esac

shopt -s nullglob
mapfile -t cxx < <(find include src tests bench/native bench/wasm examples -type f \( -name '*.cc' -o -name '*.h' \) | sort)
js=(src/js tests/*.mjs tests/js tests/browser web/src web/index.html web/vite.config.ts bench/*.mjs bench/wasm/*.mjs bench/lib bench/ab scripts/*.mjs examples)
prettier=node_modules/.bin/prettier
command -v clang-format >/dev/null || { echo "format: clang-format is missing (bash scripts/setup.sh)" >&2; exit 1; }
[[ -x $prettier ]] || { echo "format: $prettier is missing (bash scripts/setup.sh)" >&2; exit 1; }

if ((check == 0)); then
  clang-format -i "${cxx[@]}"
  "$prettier" --write --log-level warn "${js[@]}"
  exit 0
fi

status=0
bad=()
for f in "${cxx[@]}"; do
  clang-format --dry-run -Werror "$f" >/dev/null 2>&1 || bad+=("$f")
done
if ((${#bad[@]})); then
  printf 'format: not clang-formatted: %s\n' "${bad[@]}"
  status=1
else
  echo "format: clang-format: ${#cxx[@]} C++ files formatted"
fi
# --list-different prints each file that differs from Prettier's output.
if different=$("$prettier" --list-different "${js[@]}"); then
  echo "format: prettier: src/js, tests, web, bench, scripts, examples formatted"
else
  [[ -n $different ]] && printf 'format: not prettier-formatted: %s\n' $different
  status=1
fi
((status == 0)) || echo "format: run bash scripts/format.sh to rewrite them" >&2
exit $status
