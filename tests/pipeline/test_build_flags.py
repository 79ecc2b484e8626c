"""The build's per-file optimisation (CMakeLists.txt, TORCH_EXT_GLUE_OPT): the generated
registration shards compile at the glue flag (-O1 by default, the last -O on their
command line, so it wins over the build type's -O3); hand-written C++ (the launcher,
the runtime, the hand-written op bodies) keeps the build type's flags."""

import re
from pathlib import Path

from torch_ext import config

REPO = Path(__file__).resolve().parents[2]


def _flags(ninja: str) -> dict[str, str]:
    """{object's source file name: its FLAGS line} of build.ninja's compile statements."""
    out = {}
    for m in re.finditer(
        r"^build \S+\.cpp\.o: \S+ (\S+\.cpp)[^\n]*\n((?:  [^\n]*\n)+)", ninja, re.M
    ):
        flags = re.search(r"^  FLAGS = (.*)$", m.group(2), re.M)
        out[Path(m.group(1)).name] = flags.group(1) if flags else ""
    return out


def _opts(flags: str) -> list[str]:
    return re.findall(r"(?:^| )(-O[0-3sg]?)(?= |$)", flags)


def test_generated_shards_compile_at_the_glue_flag():
    build = Path(config.get("TORCH_EXT_BUILD_DIR") or REPO / "build")
    flags = _flags((build / "build.ninja").read_text())
    shards = [n for n in flags if n.startswith("RegisterPrivateUse1_")]
    assert len(shards) == 8, sorted(flags)
    glue = config.get("TORCH_EXT_GLUE_OPT")
    assert glue
    assert all(_opts(flags[n])[-1] == glue for n in shards), {n: flags[n] for n in shards}
    build_type = _opts(flags["Launcher.cpp"])
    for hand in ("Launcher.cpp", "PlanReplay.cpp", "Glu.cpp", "Allocator.cpp"):
        assert _opts(flags[hand]) == build_type and len(set(build_type)) <= 1, flags[hand]
