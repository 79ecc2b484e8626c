#!/usr/bin/env bash
# Installs what torch_ext needs and builds it in place (incremental: ninja +
# ccache when present). Safe to run again; a manifest edit rebuilds one shard.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
TORCH_VERSION=${TORCH_EXT_TORCH_VERSION:-2.13.0}
if ! "$PY" -c "import torch" 2>/dev/null; then
  # Pin torch: an unpinned resolve pulls a multi-GB CUDA build.
  "$PY" -m pip install -q "torch==${TORCH_VERSION}"
fi
"$PY" -m pip install -q "triton>=3.6" pyyaml pytest expecttest ninja cmake
# ccache makes rebuilds and variant builds (tests/pipeline) cheap; optional.
command -v ccache >/dev/null || { command -v apt-get >/dev/null && [ "$(id -u)" = 0 ] &&
  (apt-get update -qq && apt-get install -y -qq ccache) >/dev/null 2>&1; } || true
"$PY" -m pip install -q --no-build-isolation --no-deps -e . 2>&1 | grep -v "^\s*$" || true
"$PY" -c "import torch_ext" || { echo "torch_ext failed to build or import" >&2; exit 1; }
