"""Which `triton:` launches of a decode step the census finds under no aten op (the
GPU-only failure of tests/bench/test_census.py), with each one's parent chain, and
the per-thread CPU readings host_profile's first line comes from.

    TORCH_EXT_DRIVER=cuda python tests_gpu/harness/census_outside.py"""

import collections

import torch
from torch.profiler import ProfilerActivity, profile

import torch_ext  # noqa: F401
from bench import census
from bench.models import workloads

run = workloads.WORKLOADS["llama_decode_static"].build(torch.device("privateuseone"), True)
for _ in range(3):
    run.step()
for acts in ([ProfilerActivity.CPU], [ProfilerActivity.CPU, ProfilerActivity.CUDA]):
    with profile(activities=acts, record_shapes=True) as prof:
        run.step()
    outside = collections.Counter()
    for e in prof.events():
        if e.name.startswith("triton:") and census._top_aten(e) is None:
            chain, p = [], e.cpu_parent
            while p is not None:
                chain.append(p.name)
                p = p.cpu_parent
            outside[(e.name, tuple(chain), e.thread)] += 1
    print(f"activities {acts}: {sum(outside.values())} triton launches outside aten ops")
    for (name, chain, thread), n in outside.most_common(20):
        print(f"  {n} x {name} thread {thread} parents {list(chain)}")
before = census.thread_cpu()
for _ in range(5):
    run.step()
after = census.thread_cpu()
print(
    "thread CPU over 5 steps:",
    {t: (after[t][0], after[t][1] - before.get(t, ("", 0.0))[1]) for t in after},
)
