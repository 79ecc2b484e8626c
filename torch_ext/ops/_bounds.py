"""Out-of-range indices: the kernels that read an index tensor mask such lanes
off (nothing is read or written out of bounds) and `record` the offending index
in a flag slot; `check` turns a set slot into the error PyTorch raises, naming
the index (and the op, through the message registered for the slot).

Slots come from a per-device ring of RING flags (int64 pairs: set, index),
zeroed once; a slot is written only when an index is bad, and cleared when it
is reported, so an op costs no extra launch.

The host driver reads the op's slot at once (its kernels have already run).
On the cuda driver reading a slot would stall the host until the GPU catches
up, so the ring is copied back asynchronously into pinned memory, one copy in
flight at a time, and looked at by the next checked op or by `synchronize()`:
like CUDA's own device-side errors the report may come at a later call, but the
device stays usable and no memory was touched out of bounds.
"""

import math
import time
import warnings
import torch
import triton
import triton.language as tl

from . import _launch


RING = 1024
# The cuda driver's flags are looked at no more often than this (seconds of host time);
# synchronize() reports whatever is pending at once.
POLL_INTERVAL_S = 1e-3
# Slots after the ring are never reused: each belongs to one launch plan
# (csrc/launch/Plan.h), whose replays write the same slot; its message stays.
PINNED = 8192


@triton.jit
def record(flag, idx, bad):
    """If any lane of the 1-d block is `bad`: flag[1] = an offending index (the
    largest), flag[0] = 1. One reduction and two scalar stores per program:
    per-lane predicated stores cost a memory-bound kernel a third of its speed
    (embedding on an H200), even when no lane is bad."""
    if tl.max(bad.to(tl.int32), 0) > 0:
        v = tl.max(tl.where(bad, idx.to(tl.int64), -4611686018427387904), 0)
        tl.store(flag + 1, v)
        tl.store(flag, v * 0 + 1)


class _Ring:
    def __init__(self, device):
        self.flags = _launch.persistent_zeros((RING + PINNED, 2), torch.long, device)
        self.next = 0
        self.pinned = 0
        self.messages = [None] * (RING + PINNED)  # (exception, message with {} for the index)
        # Only the cuda driver's flags are read back asynchronously (plain CPU
        # or torch.cuda tensors, as tests/ops uses, are read at once).
        self.deferred = device.type == "privateuseone" and _driver() != "host"
        self.host = None  # pinned copy of flags (deferred)
        self.event = None  # recorded after each copy
        self.copied = 0  # rows of the copy in flight (0: none)
        self.polled = -math.inf  # time.monotonic() of the last poll

    def take(self, exc, message):
        if _launch.recording():
            if self.pinned < PINNED:
                s = RING + self.pinned
                self.pinned += 1
                self.messages[s] = (exc, message)
                return s
            _launch.unreplayable("bounds check slots exhausted")
        s = self.next
        self.next = (s + 1) % RING
        self.messages[s] = (exc, message)
        return s

    def report(self, values, late):
        """Raises for the first set slot of `values` (a CPU (RING, 2) tensor),
        clearing the set slots on the device."""
        bad = torch.nonzero(values[:, 0]).reshape(-1).tolist()
        if not bad:
            return
        for s in bad:
            self.flags[s].zero_()
        exc, message = self.messages[bad[0]]
        note = " (reported asynchronously: it comes from an earlier launch)" if late else ""
        raise exc(message.format(int(values[bad[0], 1])) + note)

    def poll(self, wait):
        """cuda: examines a finished copy, then starts the next one. A copy takes the
        ring and the plans' slots taken so far, not the whole table: 147 KB copied
        back per indexing op made index_select 3.8x torch's cost per call (H200). And
        at most one poll per POLL_INTERVAL_S of host time: a copy, an event and its
        query per call still cost index_select 26-38 us against torch's 9-11 (H200)."""
        if not wait:
            now = time.monotonic()
            if now - self.polled < POLL_INTERVAL_S:
                return
            self.polled = now
        if self.copied:
            if not wait and not self.event.query():
                return
            self.event.synchronize()
            n, self.copied = self.copied, 0  # reported once, though report raises
            self.report(self.host[:n], late=True)
        if self.host is None:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")  # pin_memory(device) is deprecated, not replaced
                self.host = torch.empty(RING + PINNED, 2, dtype=torch.long).pin_memory(
                    self.flags.device
                )
            self.event = torch.privateuseone.Event()
        if not wait:
            n = RING + self.pinned
            self.host[:n].copy_(self.flags[:n], non_blocking=True)
            self.event.record()
            self.copied = n


_rings = {}


def _driver():
    from torch_ext import _C

    return _C._driver_name()


def _ring(device):
    r = _rings.get(device)
    if r is None:
        r = _rings[device] = _Ring(device)
    return r


def new_flag(device, what="index", size=None, exc=IndexError, message=None):
    """A flag slot for one launch on `device`, with the error to raise if the
    kernel records a bad index there (`message` has one {} for the index)."""
    message = message or f"{what}: index {{}} is out of bounds for dimension with size {size}"
    r = _ring(torch.device(device))
    return r.flags[r.take(exc, message)]


def check(flag):
    """Raises if the launch that used `flag` recorded an out-of-range index:
    at once, or for the cuda driver at a later check or synchronize."""
    r = _ring(flag.device)
    if r.deferred:
        if _launch.recording():  # replays poll too (no device sync; C++ skips the
            # calls within POLL_INTERVAL_S of the last one without entering Python)
            _launch.after(_poll, (r,), "bounds check", POLL_INTERVAL_S)
        with _launch.paused():  # its copy-back is not part of the op
            r.poll(wait=False)
        return
    if _launch.recording():  # the host driver: a replay checks at once too
        _launch.after(_check_now, (r, flag), "bounds check")
    with _launch.paused():
        _check_now(r, flag)


def _poll(r):
    r.poll(wait=False)


def _check_now(r, flag):
    bad, value = flag.tolist()
    if bad:
        flag.zero_()
        exc, message = r.messages[
            (flag.data_ptr() - r.flags.data_ptr()) // (2 * flag.element_size())
        ]
        raise exc(message.format(value))


def raise_pending():
    """After a device synchronize: reports any out-of-range index recorded so far."""
    for r in list(_rings.values()):
        if r.deferred:
            r.poll(wait=True)
            r.report(r.flags.cpu(), late=True)
