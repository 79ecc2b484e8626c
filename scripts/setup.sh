#!/usr/bin/env bash
# Installs what torch_ext needs and builds it in place (incremental: ninja +
# ccache when present). Safe to run again; a manifest edit rebuilds one shard.
# Runtime and test dependencies are the ones pyproject.toml declares.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
TORCH_VERSION=${TORCH_EXT_TORCH_VERSION:-2.13.0}
pipq() { "$PY" -m pip install -q --disable-pip-version-check "$@" 2>&1 | grep -v -i "warning" || true; }
if ! "$PY" -c "import torch" 2>/dev/null; then
  # Pin torch first: letting pip choose pulls a multi-GB CUDA build.
  pipq "torch==${TORCH_VERSION}"
fi
# The build backend and build tools (the build runs without isolation, against this torch).
pipq setuptools wheel ninja cmake
# ccache makes rebuilds and variant builds (tests/pipeline) cheap; optional.
command -v ccache >/dev/null || { command -v apt-get >/dev/null && [ "$(id -u)" = 0 ] &&
  (apt-get update -qq && apt-get install -y -qq ccache) >/dev/null 2>&1; } || true
# The package with its declared dependencies (torch is already satisfied) and
# the test extra, built in place.
pipq --no-build-isolation -e ".[test]"
"$PY" -c "import torch_ext" || { echo "torch_ext failed to build or import" >&2; exit 1; }
