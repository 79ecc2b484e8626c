"""Batch norm's aten entry points (native_batch_norm, _batch_norm_with_update,
_native_batch_norm_legit*, the backward ops and their out= forms) on batch_norm.py's
planner and launchers."""

import torch

from ._common import write_result
from ._declare import kernel
from .batch_norm import bn_backward, bn_forward


def _backward(grad_out, input, weight, running_mean, running_var, save_mean, save_invstd,
              train, eps, mask):  # fmt: skip
    if train:
        return bn_backward(grad_out, input, weight, save_mean, save_invstd, True, eps, mask, False)
    if running_mean is None or running_var is None:
        raise RuntimeError("torch_ext: batch_norm backward in eval mode needs running stats")
    return bn_backward(grad_out, input, weight, running_mean, running_var, False, eps, mask, True)


def _copy_out(outs, results):
    for o, r in zip(outs, results):
        write_result(o, r)
    return outs


# -- the aten entry points ------------------------------------------------------


@kernel()
def native_batch_norm(
    input: torch.Tensor,
    weight: torch.Tensor | None,
    bias: torch.Tensor | None,
    running_mean: torch.Tensor | None,
    running_var: torch.Tensor | None,
    training: bool,
    momentum: float,
    eps: float,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    return bn_forward(input, weight, bias, running_mean, running_var, training, momentum, eps)


@kernel()
def native_batch_norm_out(
    input: torch.Tensor,
    weight: torch.Tensor | None,
    bias: torch.Tensor | None,
    running_mean: torch.Tensor | None,
    running_var: torch.Tensor | None,
    training: bool,
    momentum: float,
    eps: float,
    out: torch.Tensor,
    save_mean: torch.Tensor,
    save_invstd: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    r = native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps)
    return _copy_out((out, save_mean, save_invstd), r)


@kernel()
def native_batch_norm_backward(
    grad_out: torch.Tensor,
    input: torch.Tensor,
    weight: torch.Tensor | None,
    running_mean: torch.Tensor | None,
    running_var: torch.Tensor | None,
    save_mean: torch.Tensor | None,
    save_invstd: torch.Tensor | None,
    train: bool,
    eps: float,
    output_mask: list[bool],
) -> tuple[torch.Tensor | None, torch.Tensor | None, torch.Tensor | None]:
    return _backward(grad_out, input, weight, running_mean, running_var, save_mean, save_invstd,
                     train, eps, output_mask)  # fmt: skip


def _reserve(x):
    return torch.empty((0,), dtype=torch.uint8, device=x.device)


@kernel()
def batch_norm_with_update(
    input: torch.Tensor,
    weight: torch.Tensor | None,
    bias: torch.Tensor | None,
    running_mean: torch.Tensor,
    running_var: torch.Tensor,
    momentum: float,
    eps: float,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    y, m, s = bn_forward(input, weight, bias, running_mean, running_var, True, momentum, eps)
    return y, m, s, _reserve(input)


@kernel()
def batch_norm_with_update_out(
    input: torch.Tensor,
    weight: torch.Tensor | None,
    bias: torch.Tensor | None,
    running_mean: torch.Tensor,
    running_var: torch.Tensor,
    momentum: float,
    eps: float,
    out: torch.Tensor,
    save_mean: torch.Tensor,
    save_invstd: torch.Tensor,
    reserve: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    r = bn_forward(input, weight, bias, running_mean, running_var, True, momentum, eps)
    reserve.resize_((0,))
    _copy_out((out, save_mean, save_invstd), r)
    return out, save_mean, save_invstd, reserve


@kernel()
def batch_norm_no_update(
    input: torch.Tensor,
    weight: torch.Tensor | None,
    bias: torch.Tensor | None,
    running_mean: torch.Tensor | None,
    running_var: torch.Tensor | None,
    momentum: float,
    eps: float,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    training = running_mean is None or running_var is None
    y, m, s = bn_forward(input, weight, bias, running_mean, running_var, training, momentum, eps)
    return y, m, s, _reserve(input)


@kernel()
def native_batch_norm_legit(
    input: torch.Tensor,
    weight: torch.Tensor | None,
    bias: torch.Tensor | None,
    running_mean: torch.Tensor,
    running_var: torch.Tensor,
    training: bool,
    momentum: float,
    eps: float,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    return bn_forward(input, weight, bias, running_mean, running_var, training, momentum, eps)


@kernel()
def native_batch_norm_legit_out(
    input: torch.Tensor,
    weight: torch.Tensor | None,
    bias: torch.Tensor | None,
    running_mean: torch.Tensor,
    running_var: torch.Tensor,
    training: bool,
    momentum: float,
    eps: float,
    out: torch.Tensor,
    save_mean: torch.Tensor,
    save_invstd: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    r = bn_forward(input, weight, bias, running_mean, running_var, training, momentum, eps)
    return _copy_out((out, save_mean, save_invstd), r)


@kernel()
def native_batch_norm_legit_no_stats(
    input: torch.Tensor,
    weight: torch.Tensor | None,
    bias: torch.Tensor | None,
    training: bool,
    momentum: float,
    eps: float,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    return bn_forward(input, weight, bias, None, None, True, momentum, eps)


@kernel()
def native_batch_norm_legit_no_stats_out(
    input: torch.Tensor,
    weight: torch.Tensor | None,
    bias: torch.Tensor | None,
    training: bool,
    momentum: float,
    eps: float,
    out: torch.Tensor,
    save_mean: torch.Tensor,
    save_invstd: torch.Tensor,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    r = bn_forward(input, weight, bias, None, None, True, momentum, eps)
    return _copy_out((out, save_mean, save_invstd), r)


@kernel()
def batch_norm_backward(
    grad_out: torch.Tensor,
    input: torch.Tensor,
    weight: torch.Tensor,
    running_mean: torch.Tensor | None,
    running_var: torch.Tensor | None,
    save_mean: torch.Tensor | None,
    save_var: torch.Tensor | None,
    update: bool,
    eps: float,
    output_mask: list[bool],
    reserve: torch.Tensor,
) -> tuple[torch.Tensor | None, torch.Tensor | None, torch.Tensor | None]:
    # torch's save_var is the saved invstd (as native_batch_norm_backward's save_invstd);
    # `update` says whether batch statistics were used (training).
    return _backward(grad_out, input, weight, running_mean, running_var, save_mean, save_var,
                     update, eps, output_mask)  # fmt: skip
