# Session 42, call 4: build; tests/runtime, tests/distributed, tests/bench, tests/codegen on the
# GPU with -v (each failure named as it happens, even if the limit cuts the run).
source .snap/g/prep.sh
( time MAX_JOBS=16 timeout 200 python3 setup.py build_ext --inplace ) > $OUT/r/build.log 2>&1; pack
export TORCH_EXT_FALLBACK=error TORCH_EXT_TEST_DEVICE=privateuseone
( time timeout 170 python3 -m pytest -v -p no:cacheprovider -rfE -n 15 tests/runtime tests/distributed tests/bench tests/codegen ) > $OUT/r/tests_v.log 2>&1; pack
grep -E "FAILED|ERROR" $OUT/r/tests_v.log | head -40
