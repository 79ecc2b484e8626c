"""The aten `_foreach_*` overloads, one declaration each (the manifest's
`triton:` names), over the bodies and host side of foreach.py.

An overload is a body, its operand kinds (_multi_tensor.py: L list, S number,
P number per tensor, T 0-dim tensor; V a 1-D tensor of numbers per tensor, as
the `.Tensor` overloads of addcmul/addcdiv take) and its variant: "inplace"
(`_foreach_add_`), "functional" (`_foreach_add`) or "out" (`.._out`).
add/sub pass alpha to the body: from the schema (True) or fixed (1).
"""

from __future__ import annotations

import torch

from . import _launch, foreach
from ._declare import Scalar, kernel

# What C++ passes a generated overload, in schema order: tensor lists, numbers,
# number lists and tensors (csrc/launch/Launcher.h to_arg).
_Operand = list[torch.Tensor] | torch.Tensor | list[Scalar] | Scalar


def _pointwise(op, body, kinds, variant, alpha):
    n_ops = len(kinds)
    # Numbers (S), number lists (P) and alpha are per-call numbers, out of the
    # launch-plan key: optimizers' step sizes and learning rates change every step.
    numbers = tuple(j for j, c in enumerate(kinds) if c in "SP")

    def run(*args: _Operand) -> list[torch.Tensor] | None:
        out = None
        if variant == "out":
            args, out = args[:-1], args[-1]
        operands = list(args[:n_ops])
        kinds_ = kinds
        if "V" in kinds:  # per-tensor numbers from a 1-D tensor (read on the host, as torch)
            j = kinds.index("V")
            operands[j] = operands[j].tolist()
            kinds_ = kinds.replace("V", "P")
        for j in numbers:  # a plan replays with the call's own (an optimizer's step sizes)
            operands[j] = _launch.call_numbers(operands[j], j)
        if alpha is True:
            extras = (_launch.call_numbers(args[n_ops], n_ops),)
        elif alpha is None:
            extras = ()
        else:
            extras = (alpha,)
        return foreach.apply(op, body, kinds_, operands, variant, out, extras)

    run.__name__ = op.replace(".", "_")
    run.call_numbers = numbers + ((n_ops,) if alpha is True else ())
    # What C++ takes back: the new tensors, or nothing (the in-place and out variants).
    run.__annotations__["return"] = "list[torch.Tensor]" if variant == "functional" else "None"
    return run


kernel("foreach_add_Scalar")(_pointwise("_foreach_add.Scalar", "add", "LS", "functional", 1))
kernel("foreach_add__Scalar")(_pointwise("_foreach_add_.Scalar", "add", "LS", "inplace", 1))
kernel("foreach_add_Scalar_out")(_pointwise("_foreach_add.Scalar_out", "add", "LS", "out", 1))
kernel("foreach_add_List")(_pointwise("_foreach_add.List", "add", "LL", "functional", True))
kernel("foreach_add__List")(_pointwise("_foreach_add_.List", "add", "LL", "inplace", True))
kernel("foreach_add_List_out")(_pointwise("_foreach_add.List_out", "add", "LL", "out", True))
kernel("foreach_add_ScalarList")(
    _pointwise("_foreach_add.ScalarList", "add", "LP", "functional", 1)
)
kernel("foreach_add__ScalarList")(_pointwise("_foreach_add_.ScalarList", "add", "LP", "inplace", 1))
kernel("foreach_add_ScalarList_out")(
    _pointwise("_foreach_add.ScalarList_out", "add", "LP", "out", 1)
)
kernel("foreach_add_Tensor")(_pointwise("_foreach_add.Tensor", "add", "LT", "functional", True))
kernel("foreach_add__Tensor")(_pointwise("_foreach_add_.Tensor", "add", "LT", "inplace", True))
kernel("foreach_add_Tensor_out")(_pointwise("_foreach_add.Tensor_out", "add", "LT", "out", True))
kernel("foreach_sub_Scalar")(_pointwise("_foreach_sub.Scalar", "sub", "LS", "functional", 1))
kernel("foreach_sub__Scalar")(_pointwise("_foreach_sub_.Scalar", "sub", "LS", "inplace", 1))
kernel("foreach_sub_Scalar_out")(_pointwise("_foreach_sub.Scalar_out", "sub", "LS", "out", 1))
kernel("foreach_sub_List")(_pointwise("_foreach_sub.List", "sub", "LL", "functional", True))
kernel("foreach_sub__List")(_pointwise("_foreach_sub_.List", "sub", "LL", "inplace", True))
kernel("foreach_sub_List_out")(_pointwise("_foreach_sub.List_out", "sub", "LL", "out", True))
kernel("foreach_sub_ScalarList")(
    _pointwise("_foreach_sub.ScalarList", "sub", "LP", "functional", 1)
)
kernel("foreach_sub__ScalarList")(_pointwise("_foreach_sub_.ScalarList", "sub", "LP", "inplace", 1))
kernel("foreach_sub_ScalarList_out")(
    _pointwise("_foreach_sub.ScalarList_out", "sub", "LP", "out", 1)
)
kernel("foreach_mul_Scalar")(_pointwise("_foreach_mul.Scalar", "mul", "LS", "functional", None))
kernel("foreach_mul__Scalar")(_pointwise("_foreach_mul_.Scalar", "mul", "LS", "inplace", None))
kernel("foreach_mul_Scalar_out")(_pointwise("_foreach_mul.Scalar_out", "mul", "LS", "out", None))
kernel("foreach_mul_List")(_pointwise("_foreach_mul.List", "mul", "LL", "functional", None))
kernel("foreach_mul__List")(_pointwise("_foreach_mul_.List", "mul", "LL", "inplace", None))
kernel("foreach_mul_List_out")(_pointwise("_foreach_mul.List_out", "mul", "LL", "out", None))
kernel("foreach_mul_ScalarList")(
    _pointwise("_foreach_mul.ScalarList", "mul", "LP", "functional", None)
)
kernel("foreach_mul__ScalarList")(
    _pointwise("_foreach_mul_.ScalarList", "mul", "LP", "inplace", None)
)
kernel("foreach_mul_ScalarList_out")(
    _pointwise("_foreach_mul.ScalarList_out", "mul", "LP", "out", None)
)
kernel("foreach_mul_Tensor")(_pointwise("_foreach_mul.Tensor", "mul", "LT", "functional", None))
kernel("foreach_mul__Tensor")(_pointwise("_foreach_mul_.Tensor", "mul", "LT", "inplace", None))
kernel("foreach_mul_Tensor_out")(_pointwise("_foreach_mul.Tensor_out", "mul", "LT", "out", None))
kernel("foreach_div_Scalar")(_pointwise("_foreach_div.Scalar", "div", "LS", "functional", None))
kernel("foreach_div__Scalar")(_pointwise("_foreach_div_.Scalar", "div", "LS", "inplace", None))
kernel("foreach_div_Scalar_out")(_pointwise("_foreach_div.Scalar_out", "div", "LS", "out", None))
kernel("foreach_div_List")(_pointwise("_foreach_div.List", "div", "LL", "functional", None))
kernel("foreach_div__List")(_pointwise("_foreach_div_.List", "div", "LL", "inplace", None))
kernel("foreach_div_List_out")(_pointwise("_foreach_div.List_out", "div", "LL", "out", None))
kernel("foreach_div_ScalarList")(
    _pointwise("_foreach_div.ScalarList", "div", "LP", "functional", None)
)
kernel("foreach_div__ScalarList")(
    _pointwise("_foreach_div_.ScalarList", "div", "LP", "inplace", None)
)
kernel("foreach_div_ScalarList_out")(
    _pointwise("_foreach_div.ScalarList_out", "div", "LP", "out", None)
)
kernel("foreach_div_Tensor")(_pointwise("_foreach_div.Tensor", "div", "LT", "functional", None))
kernel("foreach_div__Tensor")(_pointwise("_foreach_div_.Tensor", "div", "LT", "inplace", None))
kernel("foreach_div_Tensor_out")(_pointwise("_foreach_div.Tensor_out", "div", "LT", "out", None))
kernel("foreach_clamp_max_Scalar")(
    _pointwise("_foreach_clamp_max.Scalar", "minimum", "LS", "functional", None)
)
kernel("foreach_clamp_max__Scalar")(
    _pointwise("_foreach_clamp_max_.Scalar", "minimum", "LS", "inplace", None)
)
kernel("foreach_clamp_max_Scalar_out")(
    _pointwise("_foreach_clamp_max.Scalar_out", "minimum", "LS", "out", None)
)
kernel("foreach_clamp_max_List")(
    _pointwise("_foreach_clamp_max.List", "minimum", "LL", "functional", None)
)
kernel("foreach_clamp_max__List")(
    _pointwise("_foreach_clamp_max_.List", "minimum", "LL", "inplace", None)
)
kernel("foreach_clamp_max_List_out")(
    _pointwise("_foreach_clamp_max.List_out", "minimum", "LL", "out", None)
)
kernel("foreach_clamp_max_ScalarList")(
    _pointwise("_foreach_clamp_max.ScalarList", "minimum", "LP", "functional", None)
)
kernel("foreach_clamp_max__ScalarList")(
    _pointwise("_foreach_clamp_max_.ScalarList", "minimum", "LP", "inplace", None)
)
kernel("foreach_clamp_max_ScalarList_out")(
    _pointwise("_foreach_clamp_max.ScalarList_out", "minimum", "LP", "out", None)
)
kernel("foreach_clamp_min_Scalar")(
    _pointwise("_foreach_clamp_min.Scalar", "maximum", "LS", "functional", None)
)
kernel("foreach_clamp_min__Scalar")(
    _pointwise("_foreach_clamp_min_.Scalar", "maximum", "LS", "inplace", None)
)
kernel("foreach_clamp_min_Scalar_out")(
    _pointwise("_foreach_clamp_min.Scalar_out", "maximum", "LS", "out", None)
)
kernel("foreach_clamp_min_List")(
    _pointwise("_foreach_clamp_min.List", "maximum", "LL", "functional", None)
)
kernel("foreach_clamp_min__List")(
    _pointwise("_foreach_clamp_min_.List", "maximum", "LL", "inplace", None)
)
kernel("foreach_clamp_min_List_out")(
    _pointwise("_foreach_clamp_min.List_out", "maximum", "LL", "out", None)
)
kernel("foreach_clamp_min_ScalarList")(
    _pointwise("_foreach_clamp_min.ScalarList", "maximum", "LP", "functional", None)
)
kernel("foreach_clamp_min__ScalarList")(
    _pointwise("_foreach_clamp_min_.ScalarList", "maximum", "LP", "inplace", None)
)
kernel("foreach_clamp_min_ScalarList_out")(
    _pointwise("_foreach_clamp_min.ScalarList_out", "maximum", "LP", "out", None)
)
kernel("foreach_maximum_Scalar")(
    _pointwise("_foreach_maximum.Scalar", "maximum", "LS", "functional", None)
)
kernel("foreach_maximum__Scalar")(
    _pointwise("_foreach_maximum_.Scalar", "maximum", "LS", "inplace", None)
)
kernel("foreach_maximum_Scalar_out")(
    _pointwise("_foreach_maximum.Scalar_out", "maximum", "LS", "out", None)
)
kernel("foreach_maximum_List")(
    _pointwise("_foreach_maximum.List", "maximum", "LL", "functional", None)
)
kernel("foreach_maximum__List")(
    _pointwise("_foreach_maximum_.List", "maximum", "LL", "inplace", None)
)
kernel("foreach_maximum_List_out")(
    _pointwise("_foreach_maximum.List_out", "maximum", "LL", "out", None)
)
kernel("foreach_maximum_ScalarList")(
    _pointwise("_foreach_maximum.ScalarList", "maximum", "LP", "functional", None)
)
kernel("foreach_maximum__ScalarList")(
    _pointwise("_foreach_maximum_.ScalarList", "maximum", "LP", "inplace", None)
)
kernel("foreach_maximum_ScalarList_out")(
    _pointwise("_foreach_maximum.ScalarList_out", "maximum", "LP", "out", None)
)
kernel("foreach_minimum_Scalar")(
    _pointwise("_foreach_minimum.Scalar", "minimum", "LS", "functional", None)
)
kernel("foreach_minimum__Scalar")(
    _pointwise("_foreach_minimum_.Scalar", "minimum", "LS", "inplace", None)
)
kernel("foreach_minimum_Scalar_out")(
    _pointwise("_foreach_minimum.Scalar_out", "minimum", "LS", "out", None)
)
kernel("foreach_minimum_List")(
    _pointwise("_foreach_minimum.List", "minimum", "LL", "functional", None)
)
kernel("foreach_minimum__List")(
    _pointwise("_foreach_minimum_.List", "minimum", "LL", "inplace", None)
)
kernel("foreach_minimum_List_out")(
    _pointwise("_foreach_minimum.List_out", "minimum", "LL", "out", None)
)
kernel("foreach_minimum_ScalarList")(
    _pointwise("_foreach_minimum.ScalarList", "minimum", "LP", "functional", None)
)
kernel("foreach_minimum__ScalarList")(
    _pointwise("_foreach_minimum_.ScalarList", "minimum", "LP", "inplace", None)
)
kernel("foreach_minimum_ScalarList_out")(
    _pointwise("_foreach_minimum.ScalarList_out", "minimum", "LP", "out", None)
)
kernel("foreach_pow_List")(_pointwise("_foreach_pow.List", "pow", "LL", "functional", None))
kernel("foreach_pow__List")(_pointwise("_foreach_pow_.List", "pow", "LL", "inplace", None))
kernel("foreach_pow_List_out")(_pointwise("_foreach_pow.List_out", "pow", "LL", "out", None))
kernel("foreach_pow_Scalar")(_pointwise("_foreach_pow.Scalar", "pow", "LS", "functional", None))
kernel("foreach_pow__Scalar")(_pointwise("_foreach_pow_.Scalar", "pow", "LS", "inplace", None))
kernel("foreach_pow_Scalar_out")(_pointwise("_foreach_pow.Scalar_out", "pow", "LS", "out", None))
kernel("foreach_pow_ScalarList")(
    _pointwise("_foreach_pow.ScalarList", "pow", "LP", "functional", None)
)
kernel("foreach_pow__ScalarList")(
    _pointwise("_foreach_pow_.ScalarList", "pow", "LP", "inplace", None)
)
kernel("foreach_pow_ScalarList_out")(
    _pointwise("_foreach_pow.ScalarList_out", "pow", "LP", "out", None)
)
kernel("foreach_pow_ScalarAndTensor")(
    _pointwise("_foreach_pow.ScalarAndTensor", "pow_scalar_base", "SL", "functional", None)
)
kernel("foreach_addcmul_Scalar")(
    _pointwise("_foreach_addcmul.Scalar", "addcmul", "LLLS", "functional", None)
)
kernel("foreach_addcmul__Scalar")(
    _pointwise("_foreach_addcmul_.Scalar", "addcmul", "LLLS", "inplace", None)
)
kernel("foreach_addcmul_Scalar_out")(
    _pointwise("_foreach_addcmul.Scalar_out", "addcmul", "LLLS", "out", None)
)
kernel("foreach_addcmul_ScalarList")(
    _pointwise("_foreach_addcmul.ScalarList", "addcmul", "LLLP", "functional", None)
)
kernel("foreach_addcmul__ScalarList")(
    _pointwise("_foreach_addcmul_.ScalarList", "addcmul", "LLLP", "inplace", None)
)
kernel("foreach_addcmul_ScalarList_out")(
    _pointwise("_foreach_addcmul.ScalarList_out", "addcmul", "LLLP", "out", None)
)
kernel("foreach_addcmul_Tensor")(
    _pointwise("_foreach_addcmul.Tensor", "addcmul", "LLLV", "functional", None)
)
kernel("foreach_addcmul__Tensor")(
    _pointwise("_foreach_addcmul_.Tensor", "addcmul", "LLLV", "inplace", None)
)
kernel("foreach_addcmul_Tensor_out")(
    _pointwise("_foreach_addcmul.Tensor_out", "addcmul", "LLLV", "out", None)
)
kernel("foreach_addcdiv_Scalar")(
    _pointwise("_foreach_addcdiv.Scalar", "addcdiv", "LLLS", "functional", None)
)
kernel("foreach_addcdiv__Scalar")(
    _pointwise("_foreach_addcdiv_.Scalar", "addcdiv", "LLLS", "inplace", None)
)
kernel("foreach_addcdiv_Scalar_out")(
    _pointwise("_foreach_addcdiv.Scalar_out", "addcdiv", "LLLS", "out", None)
)
kernel("foreach_addcdiv_ScalarList")(
    _pointwise("_foreach_addcdiv.ScalarList", "addcdiv", "LLLP", "functional", None)
)
kernel("foreach_addcdiv__ScalarList")(
    _pointwise("_foreach_addcdiv_.ScalarList", "addcdiv", "LLLP", "inplace", None)
)
kernel("foreach_addcdiv_ScalarList_out")(
    _pointwise("_foreach_addcdiv.ScalarList_out", "addcdiv", "LLLP", "out", None)
)
kernel("foreach_addcdiv_Tensor")(
    _pointwise("_foreach_addcdiv.Tensor", "addcdiv", "LLLV", "functional", None)
)
kernel("foreach_addcdiv__Tensor")(
    _pointwise("_foreach_addcdiv_.Tensor", "addcdiv", "LLLV", "inplace", None)
)
kernel("foreach_addcdiv_Tensor_out")(
    _pointwise("_foreach_addcdiv.Tensor_out", "addcdiv", "LLLV", "out", None)
)
kernel("foreach_lerp_List")(_pointwise("_foreach_lerp.List", "lerp", "LLL", "functional", None))
kernel("foreach_lerp__List")(_pointwise("_foreach_lerp_.List", "lerp", "LLL", "inplace", None))
kernel("foreach_lerp_List_out")(_pointwise("_foreach_lerp.List_out", "lerp", "LLL", "out", None))
kernel("foreach_lerp_Scalar")(_pointwise("_foreach_lerp.Scalar", "lerp", "LLS", "functional", None))
kernel("foreach_lerp__Scalar")(_pointwise("_foreach_lerp_.Scalar", "lerp", "LLS", "inplace", None))
kernel("foreach_lerp_Scalar_out")(
    _pointwise("_foreach_lerp.Scalar_out", "lerp", "LLS", "out", None)
)
kernel("foreach_lerp_ScalarList")(
    _pointwise("_foreach_lerp.ScalarList", "lerp", "LLP", "functional", None)
)
kernel("foreach_lerp__ScalarList")(
    _pointwise("_foreach_lerp_.ScalarList", "lerp", "LLP", "inplace", None)
)
kernel("foreach_lerp_ScalarList_out")(
    _pointwise("_foreach_lerp.ScalarList_out", "lerp", "LLP", "out", None)
)
kernel("foreach_sqrt")(_pointwise("_foreach_sqrt", "sqrt", "L", "functional", None))
kernel("foreach_sqrt_")(_pointwise("_foreach_sqrt_", "sqrt", "L", "inplace", None))
kernel("foreach_sqrt_out")(_pointwise("_foreach_sqrt.out", "sqrt", "L", "out", None))
kernel("foreach_rsqrt")(_pointwise("_foreach_rsqrt", "rsqrt", "L", "functional", None))
kernel("foreach_rsqrt_")(_pointwise("_foreach_rsqrt_", "rsqrt", "L", "inplace", None))
kernel("foreach_rsqrt_out")(_pointwise("_foreach_rsqrt.out", "rsqrt", "L", "out", None))
kernel("foreach_neg")(_pointwise("_foreach_neg", "neg", "L", "functional", None))
kernel("foreach_neg_")(_pointwise("_foreach_neg_", "neg", "L", "inplace", None))
kernel("foreach_neg_out")(_pointwise("_foreach_neg.out", "neg", "L", "out", None))
kernel("foreach_abs")(_pointwise("_foreach_abs", "abs", "L", "functional", None))
kernel("foreach_abs_")(_pointwise("_foreach_abs_", "abs", "L", "inplace", None))
kernel("foreach_abs_out")(_pointwise("_foreach_abs.out", "abs", "L", "out", None))
kernel("foreach_exp")(_pointwise("_foreach_exp", "exp", "L", "functional", None))
kernel("foreach_exp_")(_pointwise("_foreach_exp_", "exp", "L", "inplace", None))
kernel("foreach_exp_out")(_pointwise("_foreach_exp.out", "exp", "L", "out", None))
kernel("foreach_expm1")(_pointwise("_foreach_expm1", "expm1", "L", "functional", None))
kernel("foreach_expm1_")(_pointwise("_foreach_expm1_", "expm1", "L", "inplace", None))
kernel("foreach_expm1_out")(_pointwise("_foreach_expm1.out", "expm1", "L", "out", None))
kernel("foreach_log")(_pointwise("_foreach_log", "log", "L", "functional", None))
kernel("foreach_log_")(_pointwise("_foreach_log_", "log", "L", "inplace", None))
kernel("foreach_log_out")(_pointwise("_foreach_log.out", "log", "L", "out", None))
kernel("foreach_log2")(_pointwise("_foreach_log2", "log2", "L", "functional", None))
kernel("foreach_log2_")(_pointwise("_foreach_log2_", "log2", "L", "inplace", None))
kernel("foreach_log2_out")(_pointwise("_foreach_log2.out", "log2", "L", "out", None))
kernel("foreach_log10")(_pointwise("_foreach_log10", "log10", "L", "functional", None))
kernel("foreach_log10_")(_pointwise("_foreach_log10_", "log10", "L", "inplace", None))
kernel("foreach_log10_out")(_pointwise("_foreach_log10.out", "log10", "L", "out", None))
kernel("foreach_log1p")(_pointwise("_foreach_log1p", "log1p", "L", "functional", None))
kernel("foreach_log1p_")(_pointwise("_foreach_log1p_", "log1p", "L", "inplace", None))
kernel("foreach_log1p_out")(_pointwise("_foreach_log1p.out", "log1p", "L", "out", None))
kernel("foreach_reciprocal")(
    _pointwise("_foreach_reciprocal", "reciprocal", "L", "functional", None)
)
kernel("foreach_reciprocal_")(
    _pointwise("_foreach_reciprocal_", "reciprocal", "L", "inplace", None)
)
kernel("foreach_reciprocal_out")(
    _pointwise("_foreach_reciprocal.out", "reciprocal", "L", "out", None)
)
kernel("foreach_sign")(_pointwise("_foreach_sign", "sign", "L", "functional", None))
kernel("foreach_sign_")(_pointwise("_foreach_sign_", "sign", "L", "inplace", None))
kernel("foreach_sign_out")(_pointwise("_foreach_sign.out", "sign", "L", "out", None))
kernel("foreach_sigmoid")(_pointwise("_foreach_sigmoid", "sigmoid", "L", "functional", None))
kernel("foreach_sigmoid_")(_pointwise("_foreach_sigmoid_", "sigmoid", "L", "inplace", None))
kernel("foreach_sigmoid_out")(_pointwise("_foreach_sigmoid.out", "sigmoid", "L", "out", None))
kernel("foreach_sin")(_pointwise("_foreach_sin", "sin", "L", "functional", None))
kernel("foreach_sin_")(_pointwise("_foreach_sin_", "sin", "L", "inplace", None))
kernel("foreach_sin_out")(_pointwise("_foreach_sin.out", "sin", "L", "out", None))
kernel("foreach_cos")(_pointwise("_foreach_cos", "cos", "L", "functional", None))
kernel("foreach_cos_")(_pointwise("_foreach_cos_", "cos", "L", "inplace", None))
kernel("foreach_cos_out")(_pointwise("_foreach_cos.out", "cos", "L", "out", None))
kernel("foreach_tanh")(_pointwise("_foreach_tanh", "tanh", "L", "functional", None))
kernel("foreach_tanh_")(_pointwise("_foreach_tanh_", "tanh", "L", "inplace", None))
kernel("foreach_tanh_out")(_pointwise("_foreach_tanh.out", "tanh", "L", "out", None))
kernel("foreach_erf")(_pointwise("_foreach_erf", "erf", "L", "functional", None))
kernel("foreach_erf_")(_pointwise("_foreach_erf_", "erf", "L", "inplace", None))
kernel("foreach_erf_out")(_pointwise("_foreach_erf.out", "erf", "L", "out", None))
kernel("foreach_floor")(_pointwise("_foreach_floor", "floor", "L", "functional", None))
kernel("foreach_floor_")(_pointwise("_foreach_floor_", "floor", "L", "inplace", None))
kernel("foreach_floor_out")(_pointwise("_foreach_floor.out", "floor", "L", "out", None))
kernel("foreach_ceil")(_pointwise("_foreach_ceil", "ceil", "L", "functional", None))
kernel("foreach_ceil_")(_pointwise("_foreach_ceil_", "ceil", "L", "inplace", None))
kernel("foreach_ceil_out")(_pointwise("_foreach_ceil.out", "ceil", "L", "out", None))
kernel("foreach_trunc")(_pointwise("_foreach_trunc", "trunc", "L", "functional", None))
kernel("foreach_trunc_")(_pointwise("_foreach_trunc_", "trunc", "L", "inplace", None))
kernel("foreach_trunc_out")(_pointwise("_foreach_trunc.out", "trunc", "L", "out", None))
kernel("foreach_round")(_pointwise("_foreach_round", "round", "L", "functional", None))
kernel("foreach_round_")(_pointwise("_foreach_round_", "round", "L", "inplace", None))
kernel("foreach_round_out")(_pointwise("_foreach_round.out", "round", "L", "out", None))
kernel("foreach_frac")(_pointwise("_foreach_frac", "frac", "L", "functional", None))
kernel("foreach_frac_")(_pointwise("_foreach_frac_", "frac", "L", "inplace", None))
kernel("foreach_frac_out")(_pointwise("_foreach_frac.out", "frac", "L", "out", None))


@kernel()
def foreach_zero_(self: list[torch.Tensor]) -> None:
    foreach.apply("_foreach_zero_", "zero", "L", [self], "inplace")


@kernel()
def foreach_zero(self: list[torch.Tensor]) -> list[torch.Tensor]:
    return foreach.apply("_foreach_zero", "zero", "L", [self], "functional")


@kernel()
def foreach_zero_out(self: list[torch.Tensor], out: list[torch.Tensor]) -> None:
    foreach.apply("_foreach_zero.out", "zero", "L", [self], "out", out=out)


@kernel()
def foreach_copy_(
    self: list[torch.Tensor], src: list[torch.Tensor], non_blocking: bool = False
) -> None:
    if any(s.device != t.device for s, t in zip(src, self)):
        for t, s in zip(self, src):  # across devices: per tensor, as torch's slow path
            t.copy_(s, non_blocking)
        return
    foreach.apply("_foreach_copy_", "copy", "L", [src], "out", out=self)


@kernel()
def foreach_copy(
    self: list[torch.Tensor], src: list[torch.Tensor], non_blocking: bool = False
) -> list[torch.Tensor]:
    out = [t.clone() for t in self] if self else []
    foreach_copy_(out, src, non_blocking)
    return out


@kernel()
def foreach_copy_out(
    self: list[torch.Tensor], src: list[torch.Tensor], non_blocking: bool, out: list[torch.Tensor]
) -> None:
    foreach_copy_(out, src, non_blocking)


@kernel()
def foreach_norm(
    self: list[torch.Tensor], ord: Scalar = 2, dtype: torch.dtype | None = None
) -> list[torch.Tensor]:
    return foreach.norm("_foreach_norm", self, ord, dtype)


@kernel()
def foreach_norm_out(
    self: list[torch.Tensor], ord: Scalar, dtype: torch.dtype | None, out: list[torch.Tensor]
) -> None:
    foreach.norm("_foreach_norm.Scalar_out", self, ord, dtype, out)


@kernel()
def foreach_max(self: list[torch.Tensor]) -> list[torch.Tensor]:
    return foreach.max_("_foreach_max", self)


@kernel()
def foreach_max_out(self: list[torch.Tensor], out: list[torch.Tensor]) -> None:
    foreach.max_("_foreach_max.out", self, out)
