"""Time a workload's steps; report per-thread CPU time used during the timed steps
(from /proc/self/task), and a cProfile of a few steps."""
import os, sys, time, statistics, cProfile, pstats, io, threading
sys.path.insert(0, "/tmp/w")
import torch
wl, side = sys.argv[1], sys.argv[2]
if side != "cuda":
    import torch_ext  # noqa
from bench.models import workloads
run = workloads.WORKLOADS[wl].build(torch.device(side), False)
t = time.perf_counter(); run.step(); print(f"first step {time.perf_counter()-t:.1f} s", flush=True)
for _ in range(8):
    run.step()
def cpu():
    out = {}
    for tid in os.listdir("/proc/self/task"):
        try:
            st = open(f"/proc/self/task/{tid}/stat").read()
            name = open(f"/proc/self/task/{tid}/comm").read().strip()
        except OSError:
            continue
        f = st.rsplit(")", 1)[1].split()
        out[tid] = (name, (int(f[11]) + int(f[12])) / os.sysconf("SC_CLK_TCK"))
    return out
c0 = cpu(); w0 = time.perf_counter()
ts = []
for _ in range(40):
    t = time.perf_counter(); run.step(); ts.append(time.perf_counter() - t)
w1 = time.perf_counter(); c1 = cpu()
print(f"{wl} {side} AUTOTUNE={os.environ.get('TORCH_EXT_AUTOTUNE','auto')}: median {statistics.median(ts)*1e3:.2f} ms, min {min(ts)*1e3:.2f}, max {max(ts)*1e3:.2f}")
print("steps ms:", " ".join(f"{x*1e3:.1f}" for x in ts))
print(f"threads {len(c1)}; CPU s used during {w1-w0:.2f} s of timed steps:")
for tid, (name, s) in sorted(c1.items(), key=lambda kv: -(kv[1][1] - c0.get(kv[0], (0, 0))[1])):
    d = s - c0.get(tid, (name, 0))[1]
    if d > 0.005:
        print(f"   tid {tid} {name:<20} {d:.3f} s")
print("python threads:", [th.name for th in threading.enumerate()])
p = cProfile.Profile(); p.enable()
for _ in range(10):
    run.step()
p.disable()
s = io.StringIO(); pstats.Stats(p, stream=s).sort_stats("tottime").print_stats(25); print(s.getvalue())
