# Session 40, call 7: the normalization tests with instance norm's autocast mix on group norm.
source .snap/g/prep.sh
( time MAX_JOBS=16 timeout 150 python3 setup.py build_ext --inplace ) > $OUT/r/build.log 2>&1; pack
export TORCH_EXT_FALLBACK=error TORCH_EXT_TEST_DEVICE=privateuseone
( time timeout 60 python3 -m pytest -q -p no:cacheprovider -rfE -n 8 tests/native/test_normalization.py tests/ops/test_instance_norm_kernels.py ) > $OUT/r/tests_norm.log 2>&1; pack
