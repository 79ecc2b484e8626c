# Session 40, call 4: the SDPA suite with the final head-128 forward rule (shared tiles up
# to 512 queries unless the mask is kept) and the dQ kernel heaviest first; the attention
# tests on the device.
source .snap/g/prep.sh
( time MAX_JOBS=16 timeout 200 python3 setup.py build_ext --inplace ) > $OUT/r/build.log 2>&1; pack
( time timeout 200 python3 -m bench --suite transformer --impls torch,ours --timeout 180 --ops sdpa_fwd_bwd --out $OUT/r/sdpa ) > $OUT/r/sdpa.log 2>&1; pack
export TORCH_EXT_FALLBACK=error TORCH_EXT_TEST_DEVICE=privateuseone
( time timeout 110 python3 -m pytest -q -p no:cacheprovider -rfE -n 8 tests/ops/test_attention_kernels.py tests/models/test_sdpa_fused.py ) > $OUT/r/tests_attention.log 2>&1; pack
( time timeout 100 python3 -m pytest -q -p no:cacheprovider -rfE tests_gpu/test_attention.py ) > $OUT/r/tests_gpu_attention.log 2>&1; pack
