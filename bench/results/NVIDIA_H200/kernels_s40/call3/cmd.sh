# Session 40, call 3: the SDPA suite with the head-128 forward on the shared tiles up to
# 512 queries (build); forward tiles at head 128 / 1024 queries and head 64, dK/dV and
# dQ tiles at head 64.
source .snap/g/prep.sh
( time MAX_JOBS=16 timeout 200 python3 setup.py build_ext --inplace ) > $OUT/r/build.log 2>&1 &
BUILD=$!
cd tests_gpu/harness
ATTN_CASES=8x32x32x1024x128 ATTN_KINDS=fwd timeout 60 python3 attention_tiles.py > $OUT/r/tiles_fwd128_1024.log 2>&1; pack
ATTN_CASES=8x32x32x512x128,8x32x32x1024x128 ATTN_DROPOUT=0.1 ATTN_KINDS=fwd timeout 80 python3 attention_tiles.py > $OUT/r/tiles_fwd128_drop.log 2>&1; pack
ATTN_CASES=8x12x12x2048x64,2x12x12x8192x64 ATTN_KINDS=fwd timeout 90 python3 attention_tiles.py > $OUT/r/tiles_fwd64.log 2>&1; pack
ATTN_CASES=8x12x12x2048x64 ATTN_KINDS=dkdv,dq timeout 90 python3 attention_tiles.py > $OUT/r/tiles_bwd64.log 2>&1; pack
cd /tmp/w; wait $BUILD
( time timeout 200 python3 -m bench --suite transformer --impls torch,ours --timeout 180 --ops sdpa_fwd_bwd --out $OUT/r/sdpa ) > $OUT/r/sdpa.log 2>&1; pack
