source .snap/g/prep.sh
( time MAX_JOBS=16 timeout 200 python3 setup.py build_ext --inplace ) > $R/build.log 2>&1
ls build/generated > $R/generated.txt 2>&1
T="TORCH_EXT_FALLBACK=error TORCH_EXT_TEST_DEVICE=privateuseone"
( time env TORCH_EXT_FALLBACK=error TORCH_EXT_TEST_DEVICE=privateuseone timeout 150 python3 -m pytest -q -p no:cacheprovider -rfE -n 15 tests/codegen tests/native/test_shape.py tests/native/test_pointwise_activation.py tests/ops/test_attention_kernels.py ) > $R/tests.log 2>&1
( time timeout 240 python3 -m pytest -q -p no:cacheprovider -rfE -n 4 tests_gpu ) > $R/tests_gpu.log 2>&1
tail -3 $R/*.log
