# Session 42, call 1: build; session 41's kernels (RNN cells, SyncBatchNorm, samplers,
# out_dtype products, _assert_async, weight norm, TF32 settings) under the cuda driver.
source .snap/g/prep.sh
( time MAX_JOBS=16 timeout 240 python3 setup.py build_ext --inplace ) > $OUT/r/build.log 2>&1; pack
export TORCH_EXT_FALLBACK=error TORCH_EXT_TEST_DEVICE=privateuseone
( time timeout 200 python3 -m pytest -q -p no:cacheprovider -rfE -n 8 tests/ops/test_rnn.py tests/ops/test_batch_norm_sync.py tests/ops/test_random_sampling.py tests/ops/test_matmul_dtype.py tests/ops/test_assert_async.py tests/ops/test_common.py tests/ops/test_weight_norm.py tests/native/test_indexing.py tests/native/test_shape.py tests/native/test_pointwise.py ) > $OUT/r/tests_new.log 2>&1; pack
( time timeout 100 python3 -m pytest -q -p no:cacheprovider -rfE tests_gpu/test_tf32.py ) > $OUT/r/tests_tf32.log 2>&1; pack
( time timeout 120 python3 -m pytest -q -p no:cacheprovider -rfE tests/distributed/test_sync_batch_norm.py ) > $OUT/r/tests_syncbn.log 2>&1; pack
