# Session 47, call 2: wide tiles in the TMA kernel and 64 x 96 pointer tiles among the
# candidates (standalone harness on the forward and weight-gradient products), the
# transformer suite's products, GPT-2's train step, the matmul tests.
source .snap/g/prep.sh
( ( time MAX_JOBS=14 timeout 200 python3 setup.py build_ext --inplace ) > $R/build.log 2>&1 ) &
BPID=$!
(cd tests_gpu/harness && time MM_WIDE_CASES=4096x768x768:nt,4096x3072x768:nt,4096x768x2304:nt,4096x2816x1024:nt,768x4096x768:tn,3072x4096x768:tn,768x4096x3072:tn,4096x768x768:nn timeout 200 python3 mm_wide.py) > $R/wide.log 2>&1
wait $BPID
( time timeout 150 python3 -m bench --suite transformer --impls torch,ours --timeout 140 --ops linear_fwd,linear_dgrad,linear_wgrad --out $R/lin ) > $R/lin.log 2>&1
(cd $R && tar cf lin.tar lin && rm -rf lin)
env TORCH_EXT_FALLBACK=error TORCH_EXT_TEST_DEVICE=privateuseone timeout 90 python3 -m pytest -q -p no:cacheprovider -rfE -n 12 tests/ops/test_matmul_kernels.py tests/ops/test_matmul_tma.py tests/ops/test_matmul_ws.py > $R/tests.log 2>&1
( timeout 150 python3 -m bench models --workloads gpt2_train --sides privateuseone,cuda --steps 20 --no-warm --out $R/models ) > $R/models.log 2>&1
(cd $R && tar cf models.tar models && rm -rf models)
tail -3 $R/tests.log; tail -8 $R/models.log | head -3
cat $R/wide.log
