# Session 44, call 3 (warm machine after call 2): the embedding backward writing each row's
# sum straight into the bf16 weight gradient (no float32 buffer, no conversion pass);
# GPT-2's train step against torch eager.
source .snap/g/prep.sh
( time MAX_JOBS=16 timeout 240 python3 setup.py build_ext --inplace ) > $R/build.log 2>&1
tail -1 $R/build.log
( timeout 60 python3 tests_gpu/harness/embedding_bwd.py ) > $R/embedding_bwd.log 2>&1; tail -3 $R/embedding_bwd.log
export TORCH_EXT_FALLBACK=error TORCH_EXT_TEST_DEVICE=privateuseone
( timeout 60 python3 -m pytest -q -p no:cacheprovider -rfE -n 8 tests/native/test_deterministic.py "tests/runtime/test_plan_shapes.py::test_embedding_and_cross_entropy_replay_other_lengths" ) > $R/tests.log 2>&1; tail -2 $R/tests.log
unset TORCH_EXT_FALLBACK TORCH_EXT_TEST_DEVICE
( timeout 200 python3 -m bench models --workloads gpt2_train --sides privateuseone,cuda --steps 20 --no-warm --out $R/models ) > $R/models.log 2>&1; tail -12 $R/models.log
