source .snap/g/prep.sh
# two builds side by side: the registration shards at -O1 (the default now) and at -O3
rm -rf /tmp/w3 && cp -r /tmp/w /tmp/w3 && rm -rf /tmp/w3/build
( ( time MAX_JOBS=8 timeout 300 python3 setup.py build_ext --inplace ) > $R/build_o1.log 2>&1 ) &
( cd /tmp/w3 && ( time TORCH_EXT_GLUE_OPT=-O3 MAX_JOBS=8 timeout 300 python3 setup.py build_ext --inplace ) > $R/build_o3.log 2>&1 ) &
wait
grep -c -- "-O1" build/build.ninja > $R/flags.txt; (cd /tmp/w3 && grep -c -- "-O1" build/build.ninja) >> $R/flags.txt
for k in a b; do
  for o in o1 o3; do
    d=/tmp/w; [ $o = o3 ] && d=/tmp/w3
    ( cd $d && PYTHONPATH=/tmp/site:$d timeout 150 python3 -m bench host --impls ours --calls 1000 --out $R/host_${o}_$k ) > $R/host_${o}_$k.log 2>&1
  done
done
python3 - <<'PY' > $R/compare.txt
import json, os, statistics
R = os.environ["OUT"] + "/r"
def rows(d):
    j = json.load(open(f"{R}/{d}/host.json"))
    return j
for k in ("a", "b"):
    for o in ("o1", "o3"):
        print(k, o, json.dumps(rows(f"host_{o}_{k}"))[:300])
PY
tail -n 5 $R/*.log; cat $R/flags.txt
