"""Configuration: one table (torch_ext/config.py), one C++ reader
(csrc/runtime/Config.cpp), the same parsed values on both sides, clear errors
naming the variable, and a README table that covers every variable read
anywhere in the tree."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import torch_ext
from torch_ext import _C, config

REPO = Path(__file__).resolve().parents[2]
CPP_VARS = [v.name for v in config.VARIABLES if v.in_cpp]

DEFAULTS = {
    "TORCH_EXT_DRIVER": "auto",
    "TORCH_EXT_FALLBACK": "warn",
    "TORCH_EXT_HOST_DEVICES": 1,
    "TORCH_EXT_HOST_MEMORY_LIMIT": None,
    "TORCH_EXT_HOST_PROTECT": False,
    "TORCH_EXT_FAST_LAUNCH": True,
}

# Values each side must parse alike (C++ reads getenv on each _config() call).
SET_VALUES = {
    "TORCH_EXT_DRIVER": [("host", "host"), ("cuda", "cuda"), ("auto", "auto"), ("", "auto")],
    "TORCH_EXT_FALLBACK": [("silent", "silent"), ("error", "error"), ("warn", "warn")],
    "TORCH_EXT_HOST_DEVICES": [("3", 3), ("64", 64), ("1", 1), ("", 1), ("07", 7)],
    "TORCH_EXT_HOST_MEMORY_LIMIT": [
        ("512M", 512 << 20),
        ("2G", 2 << 30),
        ("1.5k", 1536),
        ("4096", 4096),
        ("1T", 1 << 40),
        ("0.5", 0),
        (".5M", 512 << 10),
        ("3.", 3),
    ],
    "TORCH_EXT_HOST_PROTECT": [("1", True), ("0", False), ("true", True), ("off", False)],
    "TORCH_EXT_FAST_LAUNCH": [("0", False), ("1", True), ("no", False)],
}

BAD_VALUES = {
    "TORCH_EXT_DRIVER": ["gpu", "Host"],
    "TORCH_EXT_FALLBACK": ["loud"],
    "TORCH_EXT_HOST_DEVICES": ["0", "65", "two", "3x", "-1", " 3", "+3", "3_0", "003", "\u0663"],
    "TORCH_EXT_HOST_MEMORY_LIMIT": [
        "lots",
        "2GB",
        "-1G",
        "5Q",
        " 5",
        "0x10",
        "inf",
        "nan",
        "1e3K",
        "1_0",
        "K",
        ".",
    ],
    "TORCH_EXT_HOST_PROTECT": ["maybe", "2"],
    "TORCH_EXT_FAST_LAUNCH": ["sometimes"],
}


def test_every_cpp_variable_has_cases():
    assert sorted(CPP_VARS) == sorted(DEFAULTS) == sorted(SET_VALUES) == sorted(BAD_VALUES)
    assert sorted(_C._config()) == sorted(CPP_VARS)


def test_defaults_agree_in_a_clean_process():
    env = {k: v for k, v in os.environ.items() if k not in CPP_VARS}
    code = (
        "import json, torch_ext, torch_ext.config as c;"
        "print(json.dumps([c.values(in_cpp=True), torch_ext._C._config(),"
        " torch_ext._C._get_fallback_mode(), torch_ext._C._driver_name()]))"
    )
    r = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True
    )
    assert r.returncode == 0, r.stderr[-3000:]
    py, cpp, fallback, driver = json.loads(r.stdout.strip().splitlines()[-1])
    assert py == DEFAULTS
    assert cpp == DEFAULTS
    assert fallback == "warn"
    assert driver in ("host", "cuda")  # auto


def test_set_values_take_effect_in_a_fresh_process():
    env = dict(
        os.environ,
        TORCH_EXT_DRIVER="host",
        TORCH_EXT_FALLBACK="silent",
        TORCH_EXT_HOST_DEVICES="3",
        TORCH_EXT_HOST_MEMORY_LIMIT="64M",
        TORCH_EXT_HOST_PROTECT="1",
        TORCH_EXT_FAST_LAUNCH="0",
    )
    code = (
        "import json, torch, torch_ext, torch_ext.config as c;"
        "p = torch.privateuseone.get_device_properties(0);"
        "print(json.dumps([c.values(in_cpp=True), torch_ext._C._config(),"
        " torch.privateuseone.device_count(), p.total_memory, p.name,"
        " torch_ext._C._get_fallback_mode()]))"
    )
    r = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True
    )
    assert r.returncode == 0, r.stderr[-3000:]
    py, cpp, count, total, name, fallback = json.loads(r.stdout.strip().splitlines()[-1])
    expected = {
        "TORCH_EXT_DRIVER": "host",
        "TORCH_EXT_FALLBACK": "silent",
        "TORCH_EXT_HOST_DEVICES": 3,
        "TORCH_EXT_HOST_MEMORY_LIMIT": 64 << 20,
        "TORCH_EXT_HOST_PROTECT": True,
        "TORCH_EXT_FAST_LAUNCH": False,
    }
    assert py == expected and cpp == expected
    assert (count, total, fallback) == (3, 64 << 20, "silent")
    assert "protected" in name


@pytest.mark.parametrize(
    "name,text,value", [(n, t, v) for n, cases in SET_VALUES.items() for t, v in cases]
)
def test_python_and_cpp_parse_alike(monkeypatch, name, text, value):
    monkeypatch.setenv(name, text)
    assert config.get(name) == value
    assert _C._config()[name] == value


@pytest.mark.parametrize("name", CPP_VARS)
def test_unset_is_the_default_on_both_sides(monkeypatch, name):
    monkeypatch.delenv(name, raising=False)
    assert config.get(name) == DEFAULTS[name]
    assert _C._config()[name] == DEFAULTS[name]


@pytest.mark.parametrize("name,text", [(n, t) for n, texts in BAD_VALUES.items() for t in texts])
def test_bad_values_name_the_variable_on_both_sides(monkeypatch, name, text):
    monkeypatch.setenv(name, text)
    with pytest.raises(config.ConfigError, match=re.escape(name)) as py_err:
        config.get(name)
    assert f"'{text}'" in str(py_err.value)
    with pytest.raises(RuntimeError, match=re.escape(name)) as cpp_err:
        _C._config()
    assert f"'{text}'" in str(cpp_err.value)


def test_bad_driver_stops_the_import_with_the_variable_named():
    env = dict(os.environ, TORCH_EXT_DRIVER="gpu")
    r = subprocess.run(
        [sys.executable, "-c", "import torch_ext"],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
    )
    assert r.returncode != 0
    assert "TORCH_EXT_DRIVER must be auto, host or cuda, got 'gpu'" in r.stderr


def test_python_only_variables(monkeypatch, tmp_path):
    monkeypatch.delenv("TORCH_EXT_CACHE_DIR", raising=False)
    assert config.get("TORCH_EXT_CACHE_DIR") is None
    monkeypatch.setenv("TORCH_EXT_CACHE_DIR", str(tmp_path))
    from torch_ext.ops import _pointwise

    assert _pointwise.cache_dir() == str(tmp_path)
    monkeypatch.setenv("MAX_JOBS", "many")
    with pytest.raises(config.ConfigError, match="MAX_JOBS"):
        config.get("MAX_JOBS")
    with pytest.raises(KeyError, match="TORCH_EXT_NOPE is not a torch_ext configuration"):
        config.get("TORCH_EXT_NOPE")


# Reads of an environment variable, in Python, C++ and shell.
READ_PATTERNS = [
    r"getenv\(\s*\"(\w+)\"",
    r"environ\.get\(\s*\"(\w+)\"",
    r"environ\.setdefault\(\s*\"(\w+)\"",
    r"environ\[\s*\"(\w+)\"\s*\](?!\s*=)",
    r"config\.get\(\s*\"(\w+)\"",
    r"\$\{(TORCH_EXT_\w+)",
]
SOURCE_DIRS = ["torch_ext", "csrc", "codegen", "tests", "tests_gpu", "bench", "scripts"]
SUFFIXES = {".py", ".cpp", ".h", ".sh"}


def _sources():
    files = [REPO / "setup.py"]
    for d in SOURCE_DIRS:
        files += [p for p in (REPO / d).rglob("*") if p.suffix in SUFFIXES and p.is_file()]
    return [p for p in files if "golden" not in p.parts and p.name != "test_config.py"]


def test_every_torch_ext_variable_read_anywhere_is_in_the_table():
    names = {v.name for v in config.VARIABLES}
    found = {}
    for path in _sources():
        text = path.read_text(errors="replace")
        for pattern in READ_PATTERNS:
            for name in re.findall(pattern, text):
                if name.startswith("TORCH_EXT_"):
                    found.setdefault(name, []).append(str(path.relative_to(REPO)))
    assert "TORCH_EXT_HOST_DEVICES" in found  # the scan sees reads
    missing = {n: f for n, f in found.items() if n not in names}
    assert not missing, f"read but not in torch_ext/config.py's table: {missing}"


def test_the_package_and_csrc_read_the_environment_only_through_config():
    allowed = {REPO / "torch_ext" / "config.py", REPO / "csrc" / "runtime" / "Config.cpp"}
    offenders = []
    for path in _sources():
        rel = path.relative_to(REPO)
        if rel.parts[0] not in ("torch_ext", "csrc") or path in allowed:
            continue
        text = path.read_text(errors="replace")
        if re.search(r"getenv\(|environ\.get\(|os\.getenv|environ\[\s*\"\w+\"\s*\](?!\s*=)", text):
            offenders.append(str(rel))
    assert not offenders, offenders


def test_readers_named_in_the_table_exist_and_mention_the_variable():
    for var in config.VARIABLES:
        for reader in var.readers:
            path = REPO / reader
            assert path.is_file(), (var.name, reader)
            text = path.read_text()
            if var.name not in text:  # C++ readers call config::<name>()
                assert "config::" in text or "config.get" in text, (var.name, reader)


def test_readme_table_is_the_config_table():
    readme = (REPO / "README.md").read_text()
    assert config.markdown_table() in readme


def test_config_module_is_importable_without_the_extension():
    """setup.py loads it by path before _C exists."""
    code = (
        "import importlib.util, sys;"
        "s = importlib.util.spec_from_file_location('c', 'torch_ext/config.py');"
        "m = importlib.util.module_from_spec(s); s.loader.exec_module(m);"
        "assert 'torch_ext' not in sys.modules and 'torch' not in sys.modules;"
        "print(m.get('TORCH_EXT_BUILD_TYPE'))"
    )
    env = {k: v for k, v in os.environ.items() if k != "TORCH_EXT_BUILD_TYPE"}
    r = subprocess.run(
        [sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "Release"
    assert torch_ext.config is config
