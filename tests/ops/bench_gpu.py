"""Kernel time of torch_ext's Triton kernels against PyTorch eager, on CUDA.

    python tests/ops/bench_gpu.py        (a CUDA build of torch; no torch_ext._C needed)

Kernels are called directly on cuda tensors (TORCH_EXT_DRIVER=cuda
specialisations); times from triton.testing.do_bench, plus host cost per call
of a 1-element add.
"""
import os, sys
os.environ.setdefault("TORCH_EXT_DRIVER", "cuda")
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
os.environ["TORCH_EXT_TEST_DEVICE"] = "cuda"
import conftest  # noqa  bare torch_ext package
import torch, triton
from torch_ext.ops import binary, unary, reduction as R, softmax as S, blas, norm
d = "cuda"
def bench(name, fn, ref):
    t = triton.testing.do_bench(fn, warmup=25, rep=100)
    r = triton.testing.do_bench(ref, warmup=25, rep=100)
    print(f"{name:40s} ours {t*1e3:9.1f} us  torch {r*1e3:9.1f} us  ratio {t/r:5.2f}")
a = torch.randn(64 << 20, device=d); b = torch.randn(64 << 20, device=d); o = torch.empty_like(a)
bench("add fp32 64M", lambda: binary.KERNELS["add"]((o,), (a, b), torch.float32, 1), lambda: torch.add(a, b, out=o))
bench("exp fp32 64M", lambda: unary.KERNELS["exp"]((o,), (a,), torch.float32), lambda: torch.exp(a, out=o))
at = a.view(8192, 8192); ot = o.view(8192, 8192)
bench("add transposed 8192^2", lambda: binary.KERNELS["add"]((ot,), (at.t(), at), torch.float32, 1), lambda: torch.add(at.t(), at, out=ot))
s = torch.empty((), device=d)
bench("sum fp32 64M", lambda: R.sum_out(a, None, False, None, s), lambda: torch.sum(a))
rows = torch.empty(8192, device=d)
bench("sum rows 8192^2", lambda: R.sum_out(at, [1], False, None, rows), lambda: at.sum(1))
bench("sum cols 8192^2", lambda: R.sum_out(at, [0], False, None, rows), lambda: at.sum(0))
h = torch.randn(8192, 8192, device=d, dtype=torch.float16); ho = torch.empty_like(h)
bench("softmax fp16 8192^2", lambda: S.softmax_out(h, 1, False, ho), lambda: torch.softmax(h, 1))
x = torch.randn(4096, 4096, device=d, dtype=torch.bfloat16); y = torch.randn(4096, 4096, device=d, dtype=torch.bfloat16); z = torch.empty_like(x)
bench("mm bf16 4096^3", lambda: blas.mm_out(x, y, z), lambda: torch.mm(x, y, out=z))
xf = x.float(); yf = y.float(); zf = z.float()
bench("mm fp32 ieee 4096^3", lambda: blas.mm_out(xf, yf, zf), lambda: torch.mm(xf, yf, out=zf))
ln = torch.randn(8192, 4096, device=d, dtype=torch.bfloat16); w = torch.randn(4096, device=d, dtype=torch.bfloat16)
bench("layer_norm bf16 8192x4096", lambda: norm.native_layer_norm(ln, [4096], w, w, 1e-5), lambda: torch.native_layer_norm(ln, [4096], w, w, 1e-5))
small = torch.randn(1, device=d); so = torch.empty_like(small)
import time
for name, fn in [("ours add 1-elem", lambda: binary.KERNELS["add"]((so,), (small, small), torch.float32, 1)), ("torch add 1-elem", lambda: torch.add(small, small, out=so))]:
    for _ in range(100): fn()
    torch.cuda.synchronize(); t0 = time.perf_counter()
    for _ in range(2000): fn()
    torch.cuda.synchronize(); print(f"{name:40s} {(time.perf_counter()-t0)/2000*1e6:.1f} us/call")
from torch_ext.ops import attention as A
q = torch.randn(4, 32, 2048, 128, device=d, dtype=torch.bfloat16); k = torch.randn_like(q); v = torch.randn_like(q)
import torch.nn.functional as F
bench("flash attn fwd bf16 4x32x2048x128 causal", lambda: A.flash_attention_fwd(q, k, v, None, True), lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True))
o, l = A.flash_attention_fwd(q, k, v, None, True); g = torch.randn_like(o)
qr, kr, vr = [t.clone().requires_grad_() for t in (q, k, v)]; ro = F.scaled_dot_product_attention(qr, kr, vr, is_causal=True)
print("fwd maxdiff", (o.float() - ro.float()).abs().max().item())
bench("flash attn bwd bf16 causal", lambda: A.flash_attention_bwd(g, q, k, v, o, l, None, True), lambda: torch.autograd.grad(ro, (qr, kr, vr), g, retain_graph=True))
