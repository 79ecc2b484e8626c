# Session 40, call 6: instance norm through group norm after the channels_last fix: the
# normalization tests, then ours and the composite (one process), torch on cuda (another).
source .snap/g/prep.sh
( time MAX_JOBS=16 timeout 200 python3 setup.py build_ext --inplace ) > $OUT/r/build.log 2>&1; pack
( time IN_SIDE=cuda timeout 60 python3 tests_gpu/harness/instance_norm_paths.py ) > $OUT/r/instance_norm_cuda.log 2>&1; pack
( time timeout 90 python3 tests_gpu/harness/instance_norm_paths.py ) > $OUT/r/instance_norm.log 2>&1; pack
export TORCH_EXT_FALLBACK=error TORCH_EXT_TEST_DEVICE=privateuseone
( time timeout 80 python3 -m pytest -q -p no:cacheprovider -rfE -n 8 tests/native/test_normalization.py tests/ops/test_instance_norm_kernels.py ) > $OUT/r/tests_norm.log 2>&1; pack
