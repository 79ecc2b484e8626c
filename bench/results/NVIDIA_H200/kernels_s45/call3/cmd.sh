# Session 45, call 3: build, then tests/runtime, tests/bench, tests/distributed and the
# offline sm_90 audits (the LLVM-IR-only shared-memory audit under Triton 3.6).
source .snap/g/prep.sh
( time MAX_JOBS=16 timeout 200 python3 setup.py build_ext --inplace ) > $R/build.log 2>&1
export TORCH_EXT_FALLBACK=error TORCH_EXT_TEST_DEVICE=privateuseone
( time timeout 330 python3 -m pytest -v -p no:cacheprovider -rfE -n 15 tests/ops/test_backends.py tests/runtime tests/bench tests/distributed ) > $R/tests_v.log 2>&1
tail -5 $R/tests_v.log
