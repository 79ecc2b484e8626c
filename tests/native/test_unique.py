"""torch.unique and torch.unique_consecutive on privateuseone against the CPU (ops/unique.py):
of the flattened tensor, and of the slices along a dim (unique_dim,
unique_dim_consecutive), with inverse and counts; empty and zero-sized inputs, NaN
slices, and the errors PyTorch raises."""

import pytest

import torch

import torch_ext  # noqa: F401  (registers the device)

from helpers import DEV, same

nan = float("nan")
FLAGS = (
    dict(),
    dict(return_inverse=True),
    dict(return_counts=True),
    dict(return_inverse=True, return_counts=True),
)


def dev(x):
    return x.to(DEV)


@pytest.mark.parametrize("dtype", [torch.float32, torch.int64, torch.bool])
def test_unique_and_unique_consecutive(dtype):
    torch.manual_seed(6)
    x = (torch.randn(6, 50) * 3).round().to(dtype)
    for kw in FLAGS:
        same(torch.unique(dev(x), **kw), torch.unique(x, **kw))
        same(torch.unique_consecutive(dev(x), **kw), torch.unique_consecutive(x, **kw))
    same(torch.unique(dev(x[:0])), torch.unique(x[:0]))


@pytest.mark.parametrize(
    "dtype", [torch.float32, torch.bfloat16, torch.int64, torch.uint8, torch.bool]
)
@pytest.mark.parametrize("shape,dim", [((40, 3), 0), ((40, 3), 1), ((3, 25, 2), 1), ((2, 3, 30), -1),
                                       ((50,), 0), ((1, 7), 0)])  # fmt: skip
def test_unique_dim(dtype, shape, dim):
    """Slices drawn from few values, so that many repeat: sorted lexicographically, the
    inverse and counts as the CPU's; unique_consecutive with a dim collapses runs only."""
    torch.manual_seed(sum(shape) + dim)
    x = torch.randint(0, 2 if dtype == torch.bool else 3, shape).to(dtype)
    for kw in FLAGS:
        same(torch.unique(dev(x), dim=dim, **kw), torch.unique(x, dim=dim, **kw))
        same(
            torch.unique_consecutive(dev(x), dim=dim, **kw),
            torch.unique_consecutive(x, dim=dim, **kw),
        )
    flags = (True, True, True)
    same(torch.ops.aten.unique_dim(dev(x), dim, *flags), torch.ops.aten.unique_dim(x, dim, *flags))
    same(
        torch.ops.aten.unique_dim_consecutive(dev(x), dim, True, True),
        torch.ops.aten.unique_dim_consecutive(x, dim, True, True),
    )


def test_unique_dim_orders_by_every_element():
    """Rows that differ only in their last element, or share a first element with rows
    that sort elsewhere, come out in lexicographic order (one stable sort per column)."""
    x = torch.tensor([[2, 0, 1], [1, 9, 9], [2, 0, 0], [1, 9, 9], [0, 5, 5], [2, 0, 1]])
    out = torch.unique(dev(x), dim=0, return_inverse=True, return_counts=True)
    assert out[0].device.type == "privateuseone"
    same(out, torch.unique(x, dim=0, return_inverse=True, return_counts=True))
    assert out[0].cpu().tolist() == [[0, 5, 5], [1, 9, 9], [2, 0, 0], [2, 0, 1]]


def test_unique_dim_nan_and_signed_zero_slices():
    """NaN != NaN: slices holding a NaN never merge (as on the CPU); -0.0 == 0.0 do. Where
    the CPU puts NaN slices is its comparator's accident (NaN is neither less nor greater);
    ours sort them last, where torch.sort puts NaN."""
    x = torch.tensor([[nan, 1.0], [nan, 1.0], [-0.0, 2.0], [0.0, 2.0], [3.0, 1.0]])
    values, inverse, counts = torch.unique(dev(x), dim=0, return_inverse=True, return_counts=True)
    assert values.device.type == "privateuseone"
    ref = torch.tensor([[0.0, 2.0], [3.0, 1.0], [nan, 1.0], [nan, 1.0]])
    torch.testing.assert_close(values.cpu(), ref, equal_nan=True, rtol=0, atol=0)
    assert counts.cpu().tolist() == [2, 1, 1, 1]
    assert inverse.cpu().tolist() == [2, 3, 0, 0, 1]
    # the slices rebuilt from the values and the inverse are the input's
    torch.testing.assert_close(values[inverse].cpu(), x, equal_nan=True, rtol=0, atol=0)


def test_unique_dim_empty_and_errors():
    x = torch.empty(0, 3)
    same(
        torch.unique(dev(x), dim=0, return_counts=True), torch.unique(x, dim=0, return_counts=True)
    )
    with pytest.raises(RuntimeError, match="0 sized dimensions, and they aren't selected"):
        torch.unique(dev(torch.empty(3, 0)), dim=0)
    with pytest.raises(IndexError, match="Dimension out of range"):
        torch.unique(dev(torch.zeros(2, 2)), dim=2)
    with pytest.raises(IndexError, match="no dimensions"):
        torch.ops.aten.unique_dim(dev(torch.tensor(5.0)), 0)
