# Session 40, call 5: instance norm through group norm on the device: the normalization
# tests, then ours against the composite and torch's cuda.
source .snap/g/prep.sh
( time MAX_JOBS=16 timeout 200 python3 setup.py build_ext --inplace ) > $OUT/r/build.log 2>&1; pack
export TORCH_EXT_FALLBACK=error TORCH_EXT_TEST_DEVICE=privateuseone
( time timeout 100 python3 -m pytest -q -p no:cacheprovider -rfE -n 8 tests/native/test_normalization.py tests/ops/test_instance_norm_kernels.py tests/ops/test_normalization_kernels.py ) > $OUT/r/tests_norm.log 2>&1; pack
unset TORCH_EXT_FALLBACK
( time timeout 120 python3 tests_gpu/harness/instance_norm_paths.py ) > $OUT/r/instance_norm.log 2>&1; pack
