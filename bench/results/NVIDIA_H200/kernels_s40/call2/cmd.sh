# Session 40, call 2: the SDPA suite rows with the dQ kernel heaviest first (build), the
# head-128 forward tiles again, the atomic dQ at head 128 with the current kernels.
source .snap/g/prep.sh
( time MAX_JOBS=16 timeout 200 python3 setup.py build_ext --inplace ) > $OUT/r/build.log 2>&1 &
BUILD=$!
cd tests_gpu/harness
ATTN_CASES=8x32x32x512x128,8x32x32x2048x128,2x32x32x8192x128 ATTN_KINDS=fwd timeout 150 python3 attention_tiles.py > $OUT/r/tiles_fwd128.log 2>&1; pack
ATTN_CASES=8x32x32x2048x128,2x32x32x8192x128 ATTN_DROPOUT=0 ATTN_MODES=separate,tma:64x128w8s2,tma:32x64w4s3,tma:64x64w4s3,tma:32x128w4s2 timeout 150 python3 attention_dq.py > $OUT/r/dq128.log 2>&1; pack
cd /tmp/w; wait $BUILD
( time timeout 260 python3 -m bench --suite transformer --impls torch,ours --timeout 240 --ops sdpa_fwd_bwd --out $OUT/r/sdpa ) > $OUT/r/sdpa.log 2>&1; pack
