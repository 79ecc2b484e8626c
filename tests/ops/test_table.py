"""The kernel table documents every registry entry, and only those."""

from torch_ext.ops import KERNELS
from torch_ext.ops._table import TABLE


def test_table_matches_registry():
    assert sorted(set(KERNELS) - set(TABLE)) == []
    assert sorted(set(TABLE) - set(KERNELS)) == []
    assert all(callable(fn) for fn in KERNELS.values())
