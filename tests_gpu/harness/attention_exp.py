"""Whether the attention forward waits on the special-function unit: the shipped forward
(every probability by ex2.approx, 16 a clock per multiprocessor) against copies of
ops/attention_kernels.py whose unmasked key tiles take one exponential of every GROUP
on the FMA pipe (a degree-4 polynomial in inline PTX, `HELPER`; session 34: slower, and
not in the product), and against one with no exponential at all (a
bound, wrong output). bf16, causal, forward only, CUDA-graph replays; torch's SDPA
forward beside. A line per case and variant: ms, x shipped, max |out - shipped|.

    python tests_gpu/harness/attention_exp.py
"""

import importlib.util
import os
import tempfile

from standalone import DEV, ROOT  # first: torch_ext's kernels without its extension

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402
import sweeps  # noqa: E402

from torch_ext.ops import attention  # noqa: E402

SRC = open(os.path.join(ROOT, "torch_ext", "ops", "attention_kernels.py")).read()
LINE = "        p = tl.exp2(s - m_safe[:, None])\n"
assert LINE in SRC


def variant(name, group):
    """A copy of the kernels whose unmasked forward tiles take `group` (or no exp)."""
    if group is None:
        body = "            p = tl.maximum(s - m_safe[:, None] + 1.0, 0.0)\n"
    else:
        body = f"            p = exp2_split(s - m_safe[:, None], {group})\n"
    new = "        if CHECK:\n    " + LINE + "        else:\n" + body
    src = SRC.replace(LINE, new) + HELPER
    path = os.path.join(tempfile.gettempdir(), f"attn_exp_{name}.py")
    with open(path, "w") as f:
        f.write(src)
    spec = importlib.util.spec_from_file_location(f"attn_exp_{name}", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod._attn_fwd_kernel


HELPER = """
import triton.language as tl

# 2**f on [-1/2, 1/2], degree 4 (relative error 9e-6), lowest power first
_C = ("0f3F80000A", "0f3F317079", "0f3E75F0E8", "0f3D650148", "0f3C21F076")


def _asm(group):
    # the first group - 1 by ex2.approx.ftz, the last on the FMA pipe: x clamped at
    # -126, n = round(x) by adding and subtracting 1.5 * 2**23 (n is then the sum's low
    # bits), 2**(x - n) by the polynomial, n added to its exponent field
    lines = [f"ex2.approx.ftz.f32 ${i}, ${group + i};" for i in range(group - 1)]
    x = f"${2 * group - 1}"
    lines += ["{", ".reg .b32 t, r, f, p;", f"max.ftz.f32 f, {x}, 0fC2FC0000;",
              "add.rn.ftz.f32 t, f, 0f4B400000;", "sub.rn.ftz.f32 r, t, 0f4B400000;",
              "sub.rn.ftz.f32 f, f, r;", f"fma.rn.ftz.f32 p, f, {_C[4]}, {_C[3]};",
              f"fma.rn.ftz.f32 p, p, f, {_C[2]};", f"fma.rn.ftz.f32 p, p, f, {_C[1]};",
              f"fma.rn.ftz.f32 p, p, f, {_C[0]};", "shl.b32 t, t, 23;",
              f"add.s32 ${group - 1}, p, t;", "}"]
    return tl.constexpr("\\n".join(lines)), tl.constexpr(",".join(["=r"] * group + ["r"] * group))


_A2, _K2 = _asm(2)
_A4, _K4 = _asm(4)
_A8, _K8 = _asm(8)


@triton.jit
def exp2_split(x, GROUP: tl.constexpr):
    if GROUP == 2:
        y = tl.inline_asm_elementwise(_A2, _K2, [x], dtype=tl.float32, is_pure=True, pack=2)
    elif GROUP == 4:
        y = tl.inline_asm_elementwise(_A4, _K4, [x], dtype=tl.float32, is_pure=True, pack=4)
    else:
        y = tl.inline_asm_elementwise(_A8, _K8, [x], dtype=tl.float32, is_pure=True, pack=8)
    return y

"""


SHIPPED = attention._attn_fwd_kernel
VARIANTS = (
    [("shipped", SHIPPED)]
    + [(f"1 of {g} on FMA", variant(f"g{g}", g)) for g in (2, 4, 8)]
    + [("no exp (bound)", variant("none", None))]
)
CASES = [(8, 12, 2048, 64), (2, 12, 8192, 64), (32, 12, 512, 64), (8, 32, 2048, 128),
         (2, 32, 8192, 128)]  # fmt: skip
SMOKE = DEV == "cpu"
if SMOKE:
    CASES = [(1, 2, 128, 64)]
    VARIANTS = VARIANTS[:1]

for B, H, L, D in CASES:
    dt = torch.bfloat16
    q, k, v = (torch.randn(B, H, L, D, device=DEV, dtype=dt) for _ in range(3))
    tt = sweeps.bench(lambda: F.scaled_dot_product_attention(q, k, v, is_causal=True), SMOKE)
    print(f"B{B} H{H} L{L} D{D}: torch fwd {tt:.4f} ms", flush=True)
    base = None
    for name, kern in VARIANTS:
        attention._attn_fwd_kernel = kern
        out, _ = attention.flash_attention_fwd(q, k, v, None, True)
        ms = sweeps.bench(lambda: attention.flash_attention_fwd(q, k, v, None, True), SMOKE)
        if base is None:
            base, ref = ms, out.float()
        diff = (out.float() - ref).abs().max().item()
        print(f"  {name:<16} {ms:.4f} ms  {base / ms:.3f}x shipped  {tt / ms:.3f}x torch  "
              f"diff {diff:.2e}", flush=True)  # fmt: skip
    attention._attn_fwd_kernel = SHIPPED
