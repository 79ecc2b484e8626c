"""Out-of-range indices: the kernels that read an index tensor mask such lanes
off (nothing is read or written out of bounds) and `record` the offending index
in a small device flag; `check` turns the flag into an IndexError that names
the op, the index and the size.

The host driver checks at once (its kernels have already run). On the cuda
driver reading the flag would stall the host until the GPU catches up, so the
flag is copied back asynchronously into pinned memory and looked at by the next
checked op, or by `synchronize()`: like CUDA's own device-side errors the
report may come at a later call, but the device stays usable and no memory was
touched out of bounds.
"""
import collections
import warnings

import torch
import triton
import triton.language as tl

_pending = collections.deque()  # (host flag, event, exception, message) of the cuda driver
_free = []  # pinned host flags to reuse


@triton.jit
def record(flag, idx, bad):
    """Where `bad`: flag[1] = an offending index, flag[0] = 1."""
    zero = tl.zeros_like(idx)
    tl.store(flag + 1 + zero, idx, mask=bad)
    tl.store(flag + zero, zero + 1, mask=bad)


def new_flag(device):
    return torch.zeros(2, dtype=torch.long, device=device)


def _raise(exc, message, value, late=False):
    note = " (reported asynchronously: it comes from an earlier launch)" if late else ""
    raise exc(message.format(value) + note)


def _driver():
    from torch_ext import _C
    return _C._driver_name()


def check(flag, what, size, exc=IndexError, message=None):
    """Raises `exc` if a kernel recorded an out-of-range index in `flag` (at
    once on the host driver; at a later check or synchronize on cuda).
    `message` has one {} for the index."""
    message = message or f"{what}: index {{}} is out of bounds for dimension with size {size}"
    if flag.device.type != "privateuseone" or _driver() == "host":
        bad, value = flag.tolist()
        if bad:
            _raise(exc, message, value)
        return
    raise_pending(wait=False)
    host = _free.pop() if _free else _pinned(flag.device)
    host.copy_(flag, non_blocking=True)
    event = torch.privateuseone.Event()
    event.record()
    _pending.append((host, event, exc, message))


def _pinned(device):
    """Page-locked host memory of our driver (torch's own pin_memory=True would
    pin through torch.cuda where torch has CUDA)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pin_memory(device) is deprecated, not yet replaced
        return torch.empty(2, dtype=torch.long).pin_memory(device)


def raise_pending(wait=True):
    """Reports the first out-of-range index of earlier cuda launches whose flag
    has come back (all of them when `wait`)."""
    while _pending:
        host, event, exc, message = _pending[0]
        if not wait and not event.query():
            return
        event.synchronize()
        _pending.popleft()
        bad, value = host.tolist()
        _free.append(host)
        if bad:
            _pending.clear()
            _raise(exc, message, value, late=True)
