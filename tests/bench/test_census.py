"""`python -m bench census` (bench/census.py): kernels per aten op in one model step."""

from bench import census


def test_census_of_a_static_cache_decode_step():
    from torch_ext.ops import _launch

    table, total = census.census("llama_decode_static", "privateuseone", tiny=True, warmup=2)
    # every launch of the step is under an op (Python launches and replays alike) ...
    assert "(outside aten ops)" not in table
    assert total == sum(k for _, k in table.values()) > 0
    # ... and the ones the census found in excess before are one per call now
    for op in ("aten::index_copy_", "aten::cat", "aten::linear"):
        calls, kernels = table[op]
        assert calls > 0 and kernels == calls, (op, calls, kernels)
    # the census counts what _launch counts
    before = _launch.launches()
    again, total2 = census.census("llama_decode_static", "privateuseone", tiny=True, warmup=0)
    assert total2 <= _launch.launches() - before
