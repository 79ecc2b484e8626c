source .snap/g/prep.sh
( time MAX_JOBS=16 timeout 150 python3 setup.py build_ext --inplace ) > $R/build.log 2>&1
( time timeout 90 python3 -m pytest -q -p no:cacheprovider -rfE -n 2 tests_gpu/test_gluon_prototypes.py ) > $R/gluon.log 2>&1
( time env TORCH_EXT_FALLBACK=error TORCH_EXT_TEST_DEVICE=privateuseone timeout 150 python3 -m pytest -v -p no:cacheprovider -rfE -n 15 tests/models/test_zoo.py ) > $R/zoo.log 2>&1
tail -n 3 $R/build.log $R/gluon.log $R/zoo.log
