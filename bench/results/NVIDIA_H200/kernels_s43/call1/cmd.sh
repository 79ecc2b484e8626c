# Session 43, call 1: build; the GPU-only failures' diagnostics; tests/ops and tests/models -v.
source .snap/g/prep.sh
( time MAX_JOBS=16 timeout 240 python3 setup.py build_ext --inplace ) > $R/build.log 2>&1; pack
( timeout 60 python3 tests_gpu/harness/plan_lengths.py ) > $R/plan_lengths.log 2>&1
( timeout 60 python3 tests_gpu/harness/census_outside.py ) > $R/census_outside.log 2>&1
( timeout 90 python3 -m bench lengths --lengths 13-14 ) > $R/lengths.log 2>&1; pack
export TORCH_EXT_FALLBACK=error TORCH_EXT_TEST_DEVICE=privateuseone
( time timeout 340 python3 -m pytest -v -p no:cacheprovider -rfE -n 15 tests/ops tests/models tests/bench/test_census.py tests/bench/test_models_smoke.py tests/bench/test_lengths_smoke.py ) > $R/tests_v.log 2>&1; pack
grep -E "FAILED|ERROR|passed|failed" $R/tests_v.log | tail -40
