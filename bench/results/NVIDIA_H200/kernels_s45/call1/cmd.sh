# Session 45, call 1: build, then tests/ops and tests/models on the GPU (fallback an error).
source .snap/g/prep.sh
( time MAX_JOBS=16 timeout 200 python3 setup.py build_ext --inplace ) > $R/build.log 2>&1
export TORCH_EXT_FALLBACK=error TORCH_EXT_TEST_DEVICE=privateuseone
( time timeout 370 python3 -m pytest -q -p no:cacheprovider -rfE -n 15 tests/ops tests/models ) > $R/tests_ops_models.log 2>&1
tail -5 $R/tests_ops_models.log
