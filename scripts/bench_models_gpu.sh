#!/usr/bin/env bash
# Builds torch_ext and runs `python -m bench host` / `python -m bench models`
# on a GPU machine, one workload at a time, so that a stopped run keeps the
# pieces it finished. Results go to bench/results/<GPU name>/.
#
#   scripts/bench_models_gpu.sh host gpt2_train llama_train ...
#
# FlagGems wheels in gpu_wheels/ (if present) are installed into /tmp/site.
set -u
LOG=${OUT:-/tmp}/bench_gpu.log
export PYTHONUNBUFFERED=1
if ls gpu_wheels/*.whl > /dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site \
    gpu_wheels/*.whl && export PYTHONPATH=/tmp/site
fi
if ! ls torch_ext/_C*.so > /dev/null 2>&1; then
  t=$(date +%s)
  python3 setup.py build_ext --inplace > "${OUT:-/tmp}/build.log" 2>&1 || { tail -30 "${OUT:-/tmp}/build.log"; exit 1; }
  echo "build: $(( $(date +%s) - t )) s" | tee -a "$LOG"
fi
SIDES=${SIDES:-privateuseone,cuda,compile,flaggems}
for what in "$@"; do
  t=$(date +%s)
  if [ "$what" = host ]; then
    python3 -m bench host >> "$LOG" 2>&1
  else
    python3 -m bench models --workloads "$what" --sides "$SIDES" --timeout "${PIECE_TIMEOUT:-240}" >> "$LOG" 2>&1
  fi
  echo "== $what: $(( $(date +%s) - t )) s" | tee -a "$LOG"
  [ -n "${OUT:-}" ] && tar czf "$OUT/results.tgz" bench/results
done
grep '^== ' "$LOG"
