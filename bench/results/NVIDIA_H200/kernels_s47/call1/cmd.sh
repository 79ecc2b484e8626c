# Session 47, call 1: 192-wide tiles (matmul_candidates WIDE) against the other candidates
# (standalone harness), then the build, the transformer suite's products, the matmul tests.
source .snap/g/prep.sh
( ( time MAX_JOBS=14 timeout 200 python3 setup.py build_ext --inplace ) > $R/build.log 2>&1 ) &
BPID=$!
(cd tests_gpu/harness && time timeout 220 python3 mm_wide.py) > $R/wide.log 2>&1
wait $BPID
( time timeout 190 python3 -m bench --suite transformer --impls torch,ours --timeout 170 --ops linear_fwd,linear_dgrad,linear_wgrad --out $R/lin ) > $R/lin.log 2>&1
(cd $R && tar cf lin.tar lin && rm -rf lin)
env TORCH_EXT_FALLBACK=error TORCH_EXT_TEST_DEVICE=privateuseone timeout 110 python3 -m pytest -q -p no:cacheprovider -rfE -n 12 tests/ops/test_matmul_kernels.py tests/ops/test_matmul_tma.py tests/ops/test_matmul_ws.py > $R/tests.log 2>&1
tail -3 $R/tests.log; tail -5 $R/lin.log
cat $R/wide.log
