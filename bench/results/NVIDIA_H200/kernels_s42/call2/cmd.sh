# Session 42, call 2: build; tests/ops, tests/models, tests/runtime, tests/distributed on
# the GPU (cuda driver, fallback an error), 15 processes.
source .snap/g/prep.sh
( time MAX_JOBS=16 timeout 240 python3 setup.py build_ext --inplace ) > $OUT/r/build.log 2>&1; pack
export TORCH_EXT_FALLBACK=error TORCH_EXT_TEST_DEVICE=privateuseone
( time timeout 150 python3 -m pytest -q -p no:cacheprovider -rfE tests/distributed/test_sync_batch_norm.py ) > $OUT/r/tests_syncbn.log 2>&1; pack
( time timeout 330 python3 -m pytest -q -p no:cacheprovider -rfE -n 15 tests/ops tests/runtime tests/distributed ) > $OUT/r/tests_ops_runtime_dist.log 2>&1; pack
