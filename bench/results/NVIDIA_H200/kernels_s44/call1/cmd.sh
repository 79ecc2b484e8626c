# Session 44, call 1: build; plan_lengths and bench lengths after the size-generic
# deterministic embedding backward; tests/runtime, tests/bench, tests/distributed and the
# sort/index/embedding/deterministic tests, -v.
source .snap/g/prep.sh
( time MAX_JOBS=16 timeout 240 python3 setup.py build_ext --inplace ) > $R/build.log 2>&1
tail -3 $R/build.log
( timeout 60 python3 tests_gpu/harness/plan_lengths.py ) > $R/plan_lengths.log 2>&1
( timeout 90 python3 -m bench lengths --lengths 13-14 ) > $R/lengths.log 2>&1
export TORCH_EXT_FALLBACK=error TORCH_EXT_TEST_DEVICE=privateuseone
( time timeout 330 python3 -m pytest -v -p no:cacheprovider -rfE -n 15 tests/runtime tests/bench tests/distributed tests/ops/test_sorting_kernels.py tests/ops/test_indexing_kernels.py tests/native/test_indexing.py tests/native/test_deterministic.py ) > $R/tests_v.log 2>&1
grep -E "FAILED|ERROR|passed|failed" $R/tests_v.log | tail -30
cat $R/plan_lengths.log | cut -c1-300; tail -6 $R/lengths.log
( timeout 60 python3 tests_gpu/harness/embedding_bwd.py ) > $R/embedding_bwd.log 2>&1; cat $R/embedding_bwd.log | tail -4
