"""ops/assert_async.py: torch._assert_async on the device raises for a zero (at once on
the host driver; at a later check on a GPU), passes otherwise, and refuses tensors of
other than one element as torch does."""

import pytest
import torch

DEVICE = "privateuseone"


@pytest.mark.parametrize(
    "value", [1.0, -0.5, float("nan"), 3, True, complex(0, 1)], ids=lambda v: type(v).__name__
)
def test_nonzero_passes(value):
    torch._assert_async(torch.tensor(value, device=DEVICE))
    torch._assert_async(torch.tensor([value], device=DEVICE), "never raised")
    torch.privateuseone.synchronize()


@pytest.mark.parametrize("value", [0.0, -0.0, 0, False])
def test_zero_raises_named_error(value):
    with pytest.raises(RuntimeError, match="single nonzero value, but got zero"):
        torch._assert_async(torch.tensor(value, device=DEVICE))
        torch.privateuseone.synchronize()
    with pytest.raises(RuntimeError, match="my {check} failed"):
        torch._assert_async(torch.tensor([value], device=DEVICE), "my {check} failed")
        torch.privateuseone.synchronize()
    x = torch.ones(3, device=DEVICE)  # the device keeps working
    assert (x + 1).sum().item() == 6


def test_not_one_element_is_ambiguous():
    with pytest.raises(RuntimeError, match="no values is ambiguous"):
        torch._assert_async(torch.ones(0, device=DEVICE))
    with pytest.raises(RuntimeError, match="more than one value is ambiguous"):
        torch._assert_async(torch.ones(2, device=DEVICE))
