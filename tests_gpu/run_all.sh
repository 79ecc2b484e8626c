#!/usr/bin/env bash
# The GPU run of issue 5, on a machine with an NVIDIA GPU: build torch_ext from
# source, run the GPU tests and all of tests/ (2 GPUs: tests/runtime uses two devices) with the cuda
# driver and the CPU fallback as an error, then the benchmark.
#
#   bash tests_gpu/run_all.sh [out_dir]          # default: gpu_out
#   STEPS=build,bench bash tests_gpu/run_all.sh  # a subset
#   TEST_WORKERS=8 ...                           # tests/ in 8 processes (default: one per core, with pytest-xdist)
# tests/native needs expecttest (carry its wheel to a machine without it).
#
# Logs go to out_dir (build.log, tests_gpu.log, tests.log, bench/).
set -uo pipefail
cd "$(dirname "$0")/.."
OUT_DIR=${1:-gpu_out}
mkdir -p "$OUT_DIR"
PY=${PYTHON:-python3}
STEPS=${STEPS:-build,tests_gpu,tests,bench}
export PYTHONUNBUFFERED=1 TORCH_EXT_DRIVER=cuda TORCH_EXT_FALLBACK=error TORCH_EXT_TEST_DEVICE=privateuseone
PYTEST=("$PY" -m pytest -v -p no:cacheprovider -rfE)
"$PY" -c "import pytest_timeout" 2>/dev/null && PYTEST+=(--timeout "${TEST_TIMEOUT:-300}")
status=0
step() { [[ ",$STEPS," == *",$1,"* ]]; }

if step build; then
  start=$SECONDS
  MAX_JOBS=${MAX_JOBS:-$(nproc)} "$PY" setup.py build_ext --inplace >"$OUT_DIR/build.log" 2>&1 ||
    { tail -40 "$OUT_DIR/build.log"; exit 1; }
  echo "build: $((SECONDS - start)) s"
fi
if step tests_gpu; then
  "${PYTEST[@]}" tests_gpu >"$OUT_DIR/tests_gpu.log" 2>&1 || status=1
  echo "tests_gpu: $(tail -1 "$OUT_DIR/tests_gpu.log")"
fi
if step tests; then
  PARALLEL=()
  "$PY" -c "import xdist" 2>/dev/null && PARALLEL=(-n "${TEST_WORKERS:-auto}" --dist "${TEST_DIST:-load}")
  "${PYTEST[@]}" "${PARALLEL[@]}" ${TESTS:-tests} >"$OUT_DIR/tests.log" 2>&1 || status=1
  echo "tests: $(tail -1 "$OUT_DIR/tests.log")"
fi
if step bench; then
  "$PY" -m bench --out "$OUT_DIR/bench" >"$OUT_DIR/bench.log" 2>&1 || status=1
  echo "bench: see $OUT_DIR/bench/results.md"
fi
exit $status
