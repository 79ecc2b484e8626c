# Session 42, call 3: tests/native, tests/models, tests/codegen, tests/pipeline, tests/bench on
# the GPU (cuda driver, fallback an error), 15 processes; rebuilds only if the machine is cold.
source .snap/g/prep.sh
( time MAX_JOBS=16 timeout 240 python3 setup.py build_ext --inplace ) > $OUT/r/build.log 2>&1; pack
export TORCH_EXT_FALLBACK=error TORCH_EXT_TEST_DEVICE=privateuseone
( time timeout 300 python3 -m pytest -q -p no:cacheprovider -rfE -n 15 tests/native ) > $OUT/r/tests_native.log 2>&1; pack
( time timeout 150 python3 -m pytest -q -p no:cacheprovider -rfE -n 15 tests/models tests/codegen tests/bench ) > $OUT/r/tests_models_rest.log 2>&1; pack
