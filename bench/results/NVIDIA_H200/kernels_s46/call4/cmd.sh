source .snap/g/prep.sh
cd tests_gpu/harness
( time timeout 400 python3 bn_cl_rows.py ) > $R/bn_cl_rows.log 2>&1
tail -n 30 $R/bn_cl_rows.log
