# Session 44, call 2: build; tests/ops, tests/models and tests/runtime/test_plan_shapes.py
# on the GPU, -v (the whole of tests/ops and tests/models after the sort change).
source .snap/g/prep.sh
( time MAX_JOBS=16 timeout 240 python3 setup.py build_ext --inplace ) > $R/build.log 2>&1
tail -3 $R/build.log
export TORCH_EXT_FALLBACK=error TORCH_EXT_TEST_DEVICE=privateuseone
( time timeout 470 python3 -m pytest -v -p no:cacheprovider -rfE -n 15 tests/runtime/test_plan_shapes.py tests/ops tests/models ) > $R/tests_v.log 2>&1
grep -E "FAILED|ERROR|passed|failed" $R/tests_v.log | tail -30
