#!/usr/bin/env bash
# The GPU run of issue 5, on a machine with an NVIDIA GPU: build torch_ext from
# source, run the GPU tests and all of tests/ (2 GPUs: tests/runtime uses two devices) with the cuda
# driver and the CPU fallback as an error, then the benchmark.
#
#   bash tests_gpu/run_all.sh [out_dir]          # default: gpu_out
#   STEPS=build,bench bash tests_gpu/run_all.sh  # a subset
# Steps: build, tests_gpu, tests, bench (the kernel benchmark), and on request:
#   census  kernels and device time per aten op of one GPT-2 and one Llama train step,
#           ours and torch's (python -m bench census), into out_dir/census_*.{txt,json},
#           then the steps without a profiler and cProfile's table (census_*_cprofile.txt);
#           CENSUS_WORKLOADS=llama_decode_static for the static-cache decode
#   tune    the matmul tiling sweep against cuBLAS (tests_gpu/harness/tune_mm.py)
#   models  python -m bench models, every workload on every side (MODELS_WORKLOADS,
#           MODELS_SIDES to narrow; MODELS_GPUS=4: four pieces at a time, one GPU and a
#           quarter of the CPUs each; MODELS_ARGS: more of its options), results in
#           bench/results/<GPU>/
#   host    python -m bench host (per-op host cost), results in bench/results/<GPU>/;
#           run it with nothing else on the machine
#   zoo     the model zoo and the torchvision set with the cuda driver (convolution
#           tuning off unless TORCH_EXT_AUTOTUNE says otherwise), their table (ZOO_REPORT)
#           into out_dir/zoo.md
#   transformer  the transformer suite (GEMMs in three orientations, SDPA fwd+bwd),
#           python -m bench --suite transformer, into out_dir/transformer/
#   attention  the attention backward's dQ two ways and every kernel's tile candidates
#           against torch's SDPA (tests_gpu/harness/attention_dq.py, attention_tiles.py),
#           into out_dir/attention_{dq,tiles}.txt
#   conv    the convolution suite (ResNet-50 and MobileNetV3 shapes, three passes, NCHW
#           and channels_last), python -m bench --suite conv, into out_dir/conv/
#   TEST_WORKERS=8 ...                           # tests/ in 8 processes (default: one per core, with pytest-xdist)
#   TORCH_EXT_TEST_SHARD=2/3 STEPS=tests ...     # one third of tests/ (every third test from the second):
#                                                # the whole of it in three calls of limited time
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
if step census; then
  for w in ${CENSUS_WORKLOADS:-gpt2_train llama_train}; do
    for side in privateuseone cuda; do
      "$PY" -m bench census ${CENSUS_ARGS:-} --workload "$w" --side "$side" --json "$OUT_DIR/census_${w}_$side.json" \
        >"$OUT_DIR/census_${w}_$side.txt" 2>&1 || status=1
      echo "census $w $side: $(grep -m1 'GPU busy' "$OUT_DIR/census_${w}_$side.txt")"
      "$PY" -m bench census --cprofile --workload "$w" --side "$side" \
        >"$OUT_DIR/census_${w}_${side}_cprofile.txt" 2>&1 || status=1
      echo "census $w $side without a profiler: $(grep -m1 'ms per step' "$OUT_DIR/census_${w}_${side}_cprofile.txt")"
    done
  done
fi
if step tune; then
  TUNE_OUT="$OUT_DIR/tune_mm.json" "$PY" tests_gpu/harness/tune_mm.py >"$OUT_DIR/tune_mm.txt" 2>&1 || status=1
  tail -4 "$OUT_DIR/tune_mm.txt"
fi
if step models; then
  "$PY" -m bench models ${MODELS_WORKLOADS:+--workloads "$MODELS_WORKLOADS"} \
    ${MODELS_SIDES:+--sides "$MODELS_SIDES"} ${MODELS_GPUS:+--gpus "$MODELS_GPUS"} ${MODELS_ARGS:-} \
    >"$OUT_DIR/models.log" 2>&1 || status=1
  grep '^== ' "$OUT_DIR/models.log"
fi
if step zoo; then
  rows="$(cd "$OUT_DIR" && pwd)/zoo.jsonl"
  rm -f "$rows"
  for t in tests/models/test_zoo.py tests_gpu/test_torchvision.py; do  # two conftests: two runs
    # tuning off: the tests check results, and timing every convolution candidate of
    # every shape in two dtypes kept the torchvision set compiling for minutes
    TORCH_EXT_AUTOTUNE=${TORCH_EXT_AUTOTUNE:-off} ZOO_REPORT="$rows" "${PYTEST[@]}" -n "${TEST_WORKERS:-8}" "$t" >>"$OUT_DIR/zoo.log" 2>&1 ||
      status=1
    echo "zoo $t: $(tail -1 "$OUT_DIR/zoo.log")"
  done
  "$PY" tests/models/zoo_table.py "$rows" >"$OUT_DIR/zoo.md" 2>&1 || status=1
fi
if step host; then
  "$PY" -m bench host >"$OUT_DIR/host.log" 2>&1 || status=1
  echo "host: see bench/results/*/host.md"
fi
if step transformer; then
  "$PY" -m bench --suite transformer --out "$OUT_DIR/transformer" >"$OUT_DIR/transformer.log" 2>&1 || status=1
  echo "transformer: see $OUT_DIR/transformer/results.md"
fi
if step attention; then
  "$PY" tests_gpu/harness/attention_dq.py >"$OUT_DIR/attention_dq.txt" 2>&1 || status=1
  "$PY" tests_gpu/harness/attention_tiles.py >"$OUT_DIR/attention_tiles.txt" 2>&1 || status=1
  grep -h "best\|^==" "$OUT_DIR/attention_tiles.txt"
fi
if step conv; then
  "$PY" -m bench --suite conv --out "$OUT_DIR/conv" >"$OUT_DIR/conv.log" 2>&1 || status=1
  echo "conv: see $OUT_DIR/conv/results.md"
fi
if step bench; then
  "$PY" -m bench --out "$OUT_DIR/bench" >"$OUT_DIR/bench.log" 2>&1 || status=1
  echo "bench: see $OUT_DIR/bench/results.md"
fi
exit $status
