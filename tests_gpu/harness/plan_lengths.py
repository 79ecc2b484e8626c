"""Which op records a launch plan at each new size: the cases of
tests/runtime/test_plan_shapes.py that record more on a GPU than on the host driver.

    TORCH_EXT_DRIVER=cuda python tests_gpu/harness/plan_lengths.py

For each size it prints the plan keys that appeared (op name and the key's first bytes)
and the reasons calls stayed on Python."""

import torch
import torch.nn.functional as F

import torch_ext

C = torch_ext._C
DEV = "privateuseone"


def classes():
    """{class key: (ended, per-candidate variable counts)}: a candidate is added when
    a size records instead of replaying."""
    return {k: (ended, [len(c[1]) for c in cands]) for k, ended, cands in C._plan_classes()}


def show(label, fn, sizes):
    C._plan_clear()
    print(f"== {label}")
    for n in sizes:
        before, stats = classes(), dict(C._plan_stats())
        fn(n)
        now, after = classes(), C._plan_stats()
        changed = {k[:40]: now[k] for k in now if before.get(k) != now[k]}
        why = stats["reasons"]
        grew = {k: v - why.get(k, 0) for k, v in after["reasons"].items() if v > why.get(k, 0)}
        rec = after["recorded"] - stats["recorded"]
        print(f"  {n}: recorded {rec}; classes changed {changed}; python: {grew}")


def embedding_ce(n):
    w = torch.randn(50, 32)
    idx, target = torch.randint(0, 50, (n,)), torch.randint(0, 50, (n,))
    wd = w.to(DEV).requires_grad_()
    F.cross_entropy(F.embedding(idx.to(DEV), wd) @ wd.t(), target.to(DEV)).backward()


def baddbmm(m):
    xs = [torch.randn(16), torch.randn(3, m, 16), torch.randn(3, 16, 16)]
    xs = [x.to(DEV) for x in xs]
    torch.baddbmm(*xs)


if __name__ == "__main__":
    show("embedding + cross_entropy, forward and backward", embedding_ce, range(33, 38))
    show("baddbmm (inputs copied before)", baddbmm, range(33, 38))
