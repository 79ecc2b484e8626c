"""Split-K products of ops/matmul.py on the GPU: the Llama MLP's
up projection (4096 x 1024 -> 2816, bf16) and GPT-2's 3072 -> 768, each tuning candidate
forced in turn, through the dispatcher (launch plans recorded, then replayed) and through
matmul.mm_out directly; prints each candidate's error against cuBLAS, its non-finite
count and the split counters after it. `llama` mode (session 21's NaN, traced to split-K
counters made in a tuning thread where their zero fill never ran): bench/models' Llama,
one bf16-autocast forward and backward on privateuseone (tuning from an empty cache) and
on cuda from the same weights: the losses, the worst relative gradient difference, the
matmul choices the tuner made and the counters after.

    python tests_gpu/harness/tail_split_check.py forced|llama LABEL
"""

import sys

import torch

dev = torch.device("privateuseone")


def forced():
    import torch_ext
    from torch_ext.ops import matmul

    C = torch_ext._C
    real_tuned = matmul.tuned
    for M, K, N in ((4096, 1024, 2816), (4096, 3072, 768), (4096, 2816, 1024)):
        torch.manual_seed(0)
        x = torch.randn(M, K, dtype=torch.bfloat16, device="cuda")
        w = torch.randn(N, K, dtype=torch.bfloat16, device="cuda") / K**0.5
        ref = (x @ w.t()).float()
        xd, wd = x.cpu().to(dev), w.cpu().to(dev)
        first = matmul.spec("mm_config", M, N, K, x.dtype, "nt") or (128, 128, 64, 8, 3)
        cands = matmul.mm_candidates(first, M, N, K, x.dtype)
        print(f"{M}x{K}->{N}: {len(cands)} candidates", flush=True)
        for cfg in cands:
            matmul.tuned = lambda f, k, c, run, d, cfg=cfg: cfg
            C._plan_clear()
            worst, bad = 0.0, 0
            try:
                for i in range(12):  # call 1 records a plan, the others replay it
                    got = (xd @ wd.t()).cpu().to("cuda").float()
                    bad += int((~torch.isfinite(got)).sum())
                    worst = max(worst, float((got - ref).abs().max()))
                outs = [xd @ wd.t() for _ in range(16)]  # back to back, no host sync
                for o in outs:
                    got = o.cpu().to("cuda").float()
                    bad += int((~torch.isfinite(got)).sum())
                    worst = max(worst, float((got - ref).abs().max()))
                out = torch.empty(M, N, dtype=x.dtype, device=dev)
                for i in range(6):
                    matmul.mm_out(xd, wd.t(), out)
                    got = out.cpu().to("cuda").float()
                    bad += int((~torch.isfinite(got)).sum())
                    worst = max(worst, float((got - ref).abs().max()))
            except Exception as e:  # noqa: BLE001
                print(f"  {cfg}: {type(e).__name__}: {str(e)[:100]}", flush=True)
                continue
            arr = matmul.arrival_counters("split_k", dev).cpu()
            print(
                f"  {cfg}: max err {worst:.3g} non-finite {bad} counters {int(arr.abs().sum())}"
                f" (nonzero {int((arr != 0).sum())})",
                flush=True,
            )
    matmul.tuned = real_tuned


def main():
    mode, label = sys.argv[1], sys.argv[2]
    if mode == "forced":
        forced()
    elif mode == "cudaref":  # the cuda side, in a process of its own (below)
        torch.save(_llama_step(torch.device("cuda")), label)
    else:
        llama(label)


def _llama_step(side):
    """(loss, {name: float32 gradient on the CPU}) of one bf16-autocast step of bench/models'
    Llama on `side`, from the weights of torch.manual_seed(0)."""
    from bench.models import workloads as W
    from transformers import AutoModelForCausalLM

    cfg = W._llama_config(False)
    torch.manual_seed(0)
    model = AutoModelForCausalLM.from_config(cfg).to(side)
    ids = W._seeded_tokens(cfg.vocab_size, 8, 512).to(side)
    with torch.autocast(side.type, dtype=torch.bfloat16):
        loss = model(input_ids=ids, labels=ids).loss
    loss.backward()
    return loss.item(), {n: p.grad.float().cpu() for n, p in model.named_parameters()}


def llama(label):
    # The cuda side runs in a process that never imports torch_ext: once a PrivateUse1
    # backend is registered, at::getAccelerator() names it, and every cuda backward
    # fails the autograd engine's stream assertion (pytorch/pytorch#161129).
    import os
    import subprocess
    import tempfile

    import torch_ext  # noqa: F401
    from torch_ext.ops import _tune, matmul

    l1, g1 = _llama_step(dev)
    path = os.path.join(tempfile.mkdtemp(), "cuda.pt")
    subprocess.run([sys.executable, __file__, "cudaref", path], check=True)
    l2, g2 = torch.load(path)
    rel = sorted((float((g1[n] - g2[n]).norm() / g2[n].norm().clamp_min(1e-30)), n) for n in g2)
    print(label, "loss", l1, "cuda", l2, "worst grad rel diff", rel[-3:], flush=True)
    mm = {k: v for k, v in _tune._memory.items() if k.startswith("mm|")}
    for k, v in sorted(mm.items()):
        print(" ", k, v, flush=True)
    arr = matmul.arrival_counters("split_k", dev).cpu()
    print("counters", int(arr.abs().sum()), "nonzero", int((arr != 0).sum()), flush=True)


if __name__ == "__main__":
    main()
