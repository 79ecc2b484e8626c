"""CI smoke of the transformer benchmark (`python -m bench --suite transformer`): the frozen
case list, and one shard (a matrix product in two orientations and an attention case) at
a tiny scale, ours (the host driver) and torch on the CPU in one run."""

from bench import transformer_cases
from helpers import bench_shard


def test_transformer_case_list_is_frozen():
    cases = transformer_cases.transformer_cases()
    # 9 weights x 3 orientations, 6 attention shapes with and without dropout
    assert len(cases) == 9 * 3 + 6 * 2
    assert len({(c.op, c.shape) for c in cases}) == len(cases)
    assert {c.op for c in cases} == {"linear_fwd", "linear_dgrad", "linear_wgrad", "sdpa_fwd_bwd"}


def test_bench_transformer_shard_tiny(tmp_path):
    for impl, rows in bench_shard(tmp_path, "transformer", "2/13").items():
        assert [r["op"] for r in rows] == ["linear_dgrad", "linear_wgrad", "sdpa_fwd_bwd"], rows
        for r in rows:
            assert "error" not in r and r["kernel_ms"] > 0 and r["flops"] > 0, r
        # the attention backend each side's SDPA picks (ours: PyTorch's overrideable op)
        assert rows[2]["note"] == ("overrideable" if impl == "ours" else "flash"), rows[2]
    md = (tmp_path / "results.md").read_text()
    assert "| sdpa_fwd_bwd | b8 h12 L512 d64 causal (torch: flash) |" in md
    assert "| attention |" in md and "| matmul |" in md
