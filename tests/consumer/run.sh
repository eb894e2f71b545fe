#!/usr/bin/env bash
# CTest's consumer.* tests (registered by CMakeLists.txt for native builds
# without sanitizers): this folder's project built as docs/api-cpp.md's
# quickstart tells a C++ developer to, against the build BUILD of attnkit.
#   run.sh install BUILD WORK       cmake --install BUILD into WORK/prefix
#   run.sh find_package BUILD WORK  configure against WORK/prefix, build, run
#   run.sh pkg_config BUILD WORK    compile main.cc with `pkg-config attnkit`, run
#   run.sh subdirectory BUILD WORK  add_subdirectory(attnkit) with Catch2 hidden:
#                                   configure, compile main.cc (linking would
#                                   rebuild attnkit: the other two link and run)
#   run.sh docs                     docs/api-cpp.md shows main.cc, this
#                                   CMakeLists.txt's lines and main's output
# Environment: CMAKE, CXX (the build's), VERSION (attnkit's), LIBDIR (CMAKE_INSTALL_LIBDIR),
# ONNX (ATTNKIT_ONNX: ON when the build has the ONNX export; find_package and
# pkg_config then also build onnx.cc and check the file it writes).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
source_dir=$(cd "$here/../.." && pwd)
doc=$source_dir/docs/api-cpp.md
mode=$1
build=${2:-}
work=${3:-}
cmake=${CMAKE:-cmake}

fail() {
  echo "consumer $mode: $*" >&2
  exit 1
}

# The fenced block of docs/api-cpp.md whose opening fence is ```$1 (the first).
doc_block() {
  awk -v fence="\`\`\`$1" '$0 == fence && !done { inside = 1; next }
    inside && $0 == "```" { inside = 0; done = 1; next }
    inside { print }' "$doc"
}

# main's output, its first line's target name made generic ("AVX3" -> TARGET):
# the doc shows one host's.
normalise() { sed -E '1s/^(attnkit [^ ]+ on ).*/\1TARGET/'; }

# onnx.cc's program `$1` (with ONNX=ON): its file written, and the same bytes as its string.
check_onnx() {
  [[ ${ONNX:-OFF} == ON ]] || return 0
  [[ -x $1 ]] || fail "expected $1 (attnkit built with ONNX)"
  "$1" "$work/hello.onnx" || fail "$1 failed"
  [[ -s $work/hello.onnx ]] || fail "expected $work/hello.onnx"
}

check_output() {
  local out=$1
  echo "$out"
  [[ $(head -n1 <<<"$out") == "attnkit $VERSION on "* ]] ||
    fail "expected a first line 'attnkit $VERSION on <target>', got '$(head -n1 <<<"$out")'"
  diff <(doc_block text | normalise) <(normalise <<<"$out") ||
    fail "the output differs from docs/api-cpp.md's (< doc, > program)"
}

configure() {
  local dir=$1
  shift
  rm -rf "$dir"
  mkdir -p "$work"
  "$cmake" -S "$here" -B "$dir" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER="$CXX" "$@" >"$dir.log" 2>&1 ||
    { cat "$dir.log"; fail "configuring $here failed"; }
}

case "$mode" in
  install)
    rm -rf "$work/prefix"
    "$cmake" --install "$build" --prefix "$work/prefix"
    for f in include/attnkit/attnkit.h include/attnkit/model.h include/attnkit/version.h \
      lib/libattnkit_core.a lib/libattnkit_model.a lib/cmake/attnkit/attnkitConfig.cmake \
      lib/cmake/attnkit/attnkitConfigVersion.cmake lib/cmake/attnkit/attnkitTargets.cmake \
      lib/pkgconfig/attnkit.pc; do
      [[ -f $work/prefix/${f/#lib/$LIBDIR} ]] || fail "expected ${f/#lib/$LIBDIR} in the prefix"
    done
    if [[ ${ONNX:-OFF} == ON ]]; then
      [[ -f $work/prefix/$LIBDIR/libattnkit_onnx.a && -f $work/prefix/include/attnkit/onnx.h ]] ||
        fail "expected $LIBDIR/libattnkit_onnx.a and include/attnkit/onnx.h in the prefix (ONNX=ON)"
    fi
    # Nothing of the source or build tree, nor the in-tree helper targets.
    if grep -nF -e "$source_dir" -e "$build" -e attnkit_hwy -e attnkit_internal \
      "$work/prefix/$LIBDIR"/cmake/attnkit/*.cmake "$work/prefix/$LIBDIR/pkgconfig/attnkit.pc"; then
      fail "the installed package names the source or build tree or an in-tree target"
    fi ;;
  find_package)
    configure "$work/find_package" -DCMAKE_PREFIX_PATH="$work/prefix"
    "$cmake" --build "$work/find_package"
    check_output "$("$work/find_package/hello")"
    check_onnx "$work/find_package/hello_onnx" ;;
  pkg_config)
    export PKG_CONFIG_PATH=$work/prefix/$LIBDIR/pkgconfig
    [[ $(pkg-config --modversion attnkit) == "$VERSION" ]] ||
      fail "expected version $VERSION, got $(pkg-config --modversion attnkit)"
    mkdir -p "$work/pkg_config"
    # shellcheck disable=SC2046 # pkg-config's flags are words
    "$CXX" -std=c++17 "$here/main.cc" -o "$work/pkg_config/hello" $(pkg-config --cflags --libs attnkit)
    check_output "$("$work/pkg_config/hello")"
    if [[ ${ONNX:-OFF} == ON ]]; then
      # shellcheck disable=SC2046 # pkg-config's flags are words
      "$CXX" -std=c++17 "$here/onnx.cc" -o "$work/pkg_config/hello_onnx" $(pkg-config --cflags --libs attnkit)
      check_onnx "$work/pkg_config/hello_onnx"
    fi ;;
  subdirectory)
    # CMAKE_DISABLE_FIND_PACKAGE_Catch2: as on a machine without Catch2.
    configure "$work/subdirectory" -DATTNKIT_SUBDIRECTORY="$source_dir" \
      -DCMAKE_DISABLE_FIND_PACKAGE_Catch2=ON
    for option in ATTNKIT_BUILD_TESTS ATTNKIT_INSTALL; do
      grep -qx "$option:BOOL=OFF" "$work/subdirectory/CMakeCache.txt" ||
        fail "expected $option OFF in a subproject, got $(grep "^$option:" "$work/subdirectory/CMakeCache.txt")"
    done
    # main.cc's object alone: attnkit's include path and C++17 reach it.
    case $(sed -n 's/^CMAKE_GENERATOR:INTERNAL=//p' "$work/subdirectory/CMakeCache.txt") in
      Ninja*) object=CMakeFiles/hello.dir/main.cc.o ;;
      *) object=main.o ;;
    esac
    "$cmake" --build "$work/subdirectory" --target "$object"
    [[ -f $work/subdirectory/CMakeFiles/hello.dir/main.cc.o ]] || fail "main.cc was not compiled"
    [[ ! -e $work/subdirectory/attnkit/libattnkit_core.a ]] || fail "attnkit was built" ;;
  docs)
    diff <(doc_block cpp) "$here/main.cc" ||
      fail "docs/api-cpp.md's first cpp block differs from tests/consumer/main.cc (< doc, > file)"
    while IFS= read -r line; do
      [[ -z $line ]] && continue
      grep -qxF -- "$line" <(sed -E 's/^ +//' "$here/CMakeLists.txt") ||
        fail "docs/api-cpp.md's CMake line '$line' is not in tests/consumer/CMakeLists.txt"
    done < <(doc_block cmake)
    [[ -n $(doc_block text) ]] || fail "docs/api-cpp.md has no text block (main's output)" ;;
  *) fail "unknown mode (install, find_package, pkg_config, subdirectory, docs)" ;;
esac
