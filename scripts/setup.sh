#!/usr/bin/env bash
# Installs what torch_ext needs and builds it in place (incremental: ninja +
# ccache when present). Safe to run again; a manifest edit rebuilds one shard.
# What gets installed is what pyproject.toml declares.
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
TORCH_VERSION=${TORCH_EXT_TORCH_VERSION:-2.13.0}
pipq() { "$PY" -m pip install -q --disable-pip-version-check "$@" 2>&1 | grep -v -i "warning" || true; }
if ! "$PY" -c "import torch" 2>/dev/null; then
  # Pin torch first: letting pip choose pulls a multi-GB CUDA build.
  pipq "torch==${TORCH_VERSION}"
fi
# Build requirements, runtime dependencies and the test extra, before the
# build: it runs without isolation, against this torch, and the generator
# needs PyYAML.
mapfile -t DEPS < <("$PY" scripts/requirements.py build runtime test)
pipq "${DEPS[@]}"
# ccache makes rebuilds and variant builds (tests/pipeline) cheap; optional.
command -v ccache >/dev/null || { command -v apt-get >/dev/null && [ "$(id -u)" = 0 ] &&
  (apt-get update -qq && apt-get install -y -qq ccache) >/dev/null 2>&1; } || true
pipq --no-build-isolation --no-deps -e .
"$PY" -c "import torch_ext" || { echo "torch_ext failed to build or import" >&2; exit 1; }
