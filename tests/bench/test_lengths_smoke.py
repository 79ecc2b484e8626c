"""`python -m bench lengths` on the host driver: the tiny models at two prompt lengths and
the tiny decode, counted."""

import json

from bench import lengths


def test_lengths_counts_recordings_per_length(tmp_path):
    out = tmp_path / "lengths.json"
    assert lengths.main(["--lengths", "13-14", "--json", str(out)]) == 0
    result = json.loads(out.read_text())
    for name in ("gpt2_train", "llama_train"):
        rows = result[name]
        assert [r["length"] for r in rows] == [13, 14]
        assert all(r["replayed"] > 0 for r in rows) and rows[-1]["python"] == 0, rows
    decode = result["llama_decode_8_tokens"]
    assert decode["python"] == 0 and decode["replayed"] > 8 * 50, decode
