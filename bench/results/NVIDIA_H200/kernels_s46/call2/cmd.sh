source .snap/g/prep.sh
( time env TORCH_EXT_FALLBACK=error TORCH_EXT_TEST_DEVICE=privateuseone timeout 200 python3 -m pytest -q -p no:cacheprovider -rfE -n 8 tests/codegen ) > $R/codegen.log 2>&1
tail -n 5 $R/codegen.log
