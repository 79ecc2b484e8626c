# Session 40, call 1 (standalone kernels, no build): cache hints on the one-pass softmax /
# RMS norm beside FlagGems; causal attention heavy-first against grid order at the SDPA
# suite's configurations; head-128 backward tiles again.
source .snap/g/prep.sh
cd tests_gpu/harness
timeout 130 python3 rows_evict.py > $OUT/r/rows_evict.log 2>&1; pack
timeout 280 python3 attention_order.py > $OUT/r/attention_order.log 2>&1; pack
ATTN_CASES=8x32x32x2048x128 ATTN_KINDS=dkdv,dq timeout 150 python3 attention_tiles.py > $OUT/r/tiles128.log 2>&1; pack
