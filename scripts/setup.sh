#!/usr/bin/env bash
# Installs what attnkit needs when it is missing, on Debian 12: compilers and
# libraries from Debian's packages (apt-get, as root or through sudo), npm
# packages from the committed package-lock.json. Safe to run again: it does
# nothing when everything is there.
set -euo pipefail
cd "$(dirname "$0")/.."

# chromium, firefox-esr and webkit2gtk-driver (WebKitWebDriver; its dependency
# libwebkit2gtk-4.1-0 ships MiniBrowser) + xvfb: the page's browser tests.
# clang-format: the C++ half of the format check (scripts/format.sh).
# nlohmann-json3-dev: the JSON of checkpoint files (src/model/checkpoint_file.cc).
# libonnx-dev, libprotobuf-dev: the native ONNX export (src/model/onnx_export.cc).
packages=(cmake make g++ clang clang-format libclang-rt-14-dev emscripten libhwy-dev nlohmann-json3-dev
  libonnx-dev libprotobuf-dev
  catch2 chromium firefox-esr webkit2gtk-driver xvfb)
missing=()
for pkg in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || missing+=("$pkg")
done
if ((${#missing[@]})); then
  echo "setup: installing Debian packages: ${missing[*]}"
  sudo=()
  if [[ $(id -u) -ne 0 ]]; then
    command -v sudo >/dev/null || { echo "setup: run as root or install sudo: apt-get install ${missing[*]}" >&2; exit 1; }
    sudo=(sudo)
  fi
  "${sudo[@]}" apt-get update -q
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -q --no-install-recommends "${missing[@]}"
fi

# npm packages: from the lockfile, only when node_modules is missing or stale.
if [[ ! -f node_modules/.package-lock.json || package-lock.json -nt node_modules/.package-lock.json ]]; then
  echo "setup: npm ci"
  # The browser tests use Debian's browsers: no npm package may download one.
  PUPPETEER_SKIP_DOWNLOAD=1 npm ci --no-audit --no-fund
fi
