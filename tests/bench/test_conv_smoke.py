"""CI smoke of the convolution benchmark (`python -m bench --suite conv`): the
frozen case list's size and sharding, and one shard at a tiny scale, ours (the
host driver) and torch on the CPU in one run."""

from bench import conv_cases
from helpers import bench_shard


def test_conv_case_list_is_frozen_and_sharded():
    cases = conv_cases.conv_cases()
    # 23 ResNet-50 shapes + 12 MobileNetV3 depthwise, 3 passes, 2 layouts
    assert len(cases) == (23 + 12) * 3 * 2
    assert len({(c.op, c.shape) for c in cases}) == len(cases)
    shards = [conv_cases.shard(cases, f"{i}/7") for i in range(1, 8)]
    assert sum(len(s) for s in shards) == len(cases)
    assert {id(c) for s in shards for c in s} == {id(c) for c in cases}


def test_ops_tokens_select_cases_by_op_or_by_part_of_op_and_shape():
    from bench.worker import selected

    cases = conv_cases.conv_cases()
    stem = [c for c in cases if selected(c, {"conv_wgrad resnet50 3->64"})]
    assert [(c.op, c.shape) for c in stem] == [
        ("conv_wgrad", "resnet50 3->64 k7 s2 @224 nchw"),
        ("conv_wgrad", "resnet50 3->64 k7 s2 @224 nhwc"),
    ]
    assert len([c for c in cases if selected(c, {"conv_fwd"})]) == len(cases) // 3
    assert all(selected(c, set()) for c in cases)


def test_bench_conv_shard_tiny(tmp_path):
    for impl, rows in bench_shard(tmp_path, "conv", "3/70").items():
        assert [r["op"] for r in rows] == ["conv_fwd", "conv_wgrad", "conv_dgrad"], rows
        for r in rows:
            assert "error" not in r and r["kernel_ms"] > 0, r
    assert "| conv_fwd | resnet50" in (tmp_path / "results.md").read_text()
