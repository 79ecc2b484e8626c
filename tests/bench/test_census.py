"""`python -m bench census` (bench/census.py): kernels per aten op in one model step."""

import pytest

from bench import census


def test_census_of_a_static_cache_decode_step():
    from torch_ext.ops import _launch

    table, total = census.census("llama_decode_static", "privateuseone", tiny=True, warmup=2)
    # every launch of the step is under an op (Python launches and replays alike) ...
    assert "(outside aten ops)" not in table
    assert total == sum(row[1] for row in table.values()) > 0
    # every op's top-level calls cost the launching thread some host time
    assert all(host_us > 0 for calls, _, host_us in table.values() if calls)
    # ... and the ones the census found in excess before are one per call now
    for op in ("aten::index_copy_", "aten::cat", "aten::linear"):
        calls, kernels, _ = table[op]
        assert calls > 0 and kernels == calls, (op, calls, kernels)
    # the census counts what _launch counts
    before = _launch.launches()
    again, total2 = census.census("llama_decode_static", "privateuseone", tiny=True, warmup=0)
    assert total2 <= _launch.launches() - before


def test_device_times_charge_kernels_to_the_op_that_launched_them():
    """A synthetic CUPTI trace: kernels are matched to their launch by correlation id and
    charged to the outermost aten op around the launch on its thread; busy time is the
    union of the kernels' intervals."""
    trace = [
        {"cat": "cpu_op", "name": "aten::linear", "tid": 1, "ts": 0, "dur": 100},
        {"cat": "cpu_op", "name": "aten::addmm", "tid": 1, "ts": 10, "dur": 50},
        {"cat": "cpu_op", "name": "aten::softmax", "tid": 1, "ts": 120, "dur": 30,
         "args": {"Input Dims": [[4, 8], []], "Input Strides": [[1, 4], []]}},
        {"cat": "cpu_op", "name": "aten::mul", "tid": 2, "ts": 0, "dur": 500},  # other thread
        {"cat": "cuda_driver", "name": "cuLaunchKernel", "tid": 1, "ts": 20, "args": {"correlation": 7}},
        {"cat": "cuda_runtime", "name": "cudaLaunchKernel", "tid": 1, "ts": 130, "args": {"correlation": 8}},
        {"cat": "cuda_runtime", "name": "cudaLaunchKernel", "tid": 1, "ts": 200, "args": {"correlation": 9}},
        {"cat": "kernel", "name": "mm", "ts": 30, "dur": 40, "args": {"correlation": 7}},
        {"cat": "kernel", "name": "softmax", "ts": 60, "dur": 20, "args": {"correlation": 8}},
        {"cat": "kernel", "name": "stray", "ts": 300, "dur": 10, "args": {"correlation": 9}},
    ]  # fmt: skip
    detail = {}
    ops, summary = census.device_times(trace, detail)
    assert detail["kernels"] == {"mm": [1, 40.0], "softmax": [1, 20.0], "stray": [1, 10.0]}
    assert detail["calls"]["aten::linear"] == [1, 40.0, 1]
    assert detail["calls"]["aten::softmax [[4,8],[]] [[1,4],[]]"] == [1, 20.0, 1]
    assert ops == {
        "aten::linear": [1, 40.0],
        "aten::softmax": [1, 20.0],
        "(outside aten ops)": [1, 10.0],
    }
    # 30..80 overlapped (50 µs) plus 300..310: 60 µs busy over a 280 µs span
    assert summary == {"busy_us": 60.0, "span_us": 280, "kernels": 3}


def test_host_profile_of_a_decode_step():
    """`--cprofile`: steps timed without a profiler, then cProfile's table, which names
    the ops the model calls (a decode step reaches index_copy_ for the static cache)."""
    ms, table = census.host_profile("llama_decode_static", "privateuseone", tiny=True,
                                    warmup=1, steps=1, top=100000)  # fmt: skip
    assert ms > 0
    assert "index_copy_" in table and "tottime" in table
    # the launching thread's CPU time a step leads (Linux: /proc/self/task)
    assert "CPU ms a step by thread" in table.splitlines()[0]


def test_cpu_per_step_by_thread():
    """Each thread's CPU ms a step between two readings, busiest first; idle threads out."""
    before = {"1": ("python3", 1.0), "2": ("pt_autograd_0", 0.5), "3": ("idle", 2.0)}
    after = {"1": ("python3", 1.2), "2": ("pt_autograd_0", 0.8), "3": ("idle", 2.0),
             "4": ("new", 0.01)}  # fmt: skip
    rows = census.cpu_per_step(before, after, 10)
    assert [name for name, _ in rows] == ["pt_autograd_0", "python3", "new"]
    assert [ms for _, ms in rows] == pytest.approx([30.0, 20.0, 1.0])
    now = census.thread_cpu()
    assert any(name for name, _ in now.values()) and all(s >= 0 for _, s in now.values())
