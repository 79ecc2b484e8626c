# Session 47, call 3: the channels_last 1x1 convolutions whose products the wide tiles
# can take (forward, input and weight gradient) against cuDNN.
source .snap/g/prep.sh
( time MAX_JOBS=16 timeout 150 python3 setup.py build_ext --inplace ) > $R/build.log 2>&1
S="resnet50 1024->256 k1 s1 @14 nhwc,resnet50 1024->512 k1 s1 @14 nhwc,resnet50 512->2048 k1 s1 @7 nhwc,resnet50 2048->512 k1 s1 @7 nhwc,resnet50 1024->2048 k1 s2 @14 nhwc,resnet50 256->1024 k1 s1 @14 nhwc,resnet50 512->256 k1 s1 @28 nhwc,resnet50 512->1024 k1 s2 @28 nhwc,resnet50 256->512 k1 s2 @56 nhwc"
( time timeout 200 python3 -m bench --suite conv --impls torch,ours --timeout 150 --ops "$S" --out $R/conv ) > $R/conv.log 2>&1
(cd $R && tar cf conv.tar conv && rm -rf conv)
tail -4 $R/conv.log
