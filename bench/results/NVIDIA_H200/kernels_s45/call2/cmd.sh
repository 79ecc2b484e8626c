# Session 45, call 2: build, then tests/models (the part call 1's limit cut), the
# plan-shape tests and the trimmed sorting and training tests on the GPU.
source .snap/g/prep.sh
( time MAX_JOBS=16 timeout 200 python3 setup.py build_ext --inplace ) > $R/build.log 2>&1
export TORCH_EXT_FALLBACK=error TORCH_EXT_TEST_DEVICE=privateuseone
( time timeout 320 python3 -m pytest -v -p no:cacheprovider -rfE -n 15 tests/models tests/runtime/test_plan_shapes.py tests/ops/test_sorting_kernels.py ) > $R/tests_v.log 2>&1
tail -5 $R/tests_v.log
