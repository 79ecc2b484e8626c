"""Run a model workload's steps for a sampling profiler: warm-up, then a 'ready' file,
then steps until the time is up; prints ms per step (median of the timed part)."""
import os, sys, time, statistics
sys.path.insert(0, "/tmp/w")
import torch
wl, side, ready, secs = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4])
if side != "cuda":
    import torch_ext  # noqa
from bench.models import workloads
run = workloads.WORKLOADS[wl].build(torch.device(side), False)
for _ in range(5):
    run.step()
open(ready, "w").write(str(os.getpid()))
t_end = time.time() + secs
ts = []
while time.time() < t_end:
    t = time.perf_counter(); run.step(); ts.append(time.perf_counter() - t)
print(f"{wl} {side}: {statistics.median(ts)*1e3:.2f} ms/step over {len(ts)} steps", flush=True)
