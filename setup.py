"""Builds torch_ext._C with CMake (ninja) against the installed torch.

Install with `pip install --no-build-isolation -e .` so that pip never resolves
a different torch; the generator reads this torch's own torchgen and
native_functions.yaml.
"""

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = Path(__file__).resolve().parent


def _load_config():
    """torch_ext/config.py (the table of environment variables), loaded by path:
    importing the torch_ext package needs the extension this file builds."""
    spec = importlib.util.spec_from_file_location(
        "_torch_ext_config", ROOT / "torch_ext" / "config.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


class CMakeExtension(Extension):
    def __init__(self, name):
        super().__init__(name, sources=[])


class CMakeBuild(build_ext):
    def build_extension(self, ext):
        import torch.utils

        config = _load_config()

        build_dir = Path(config.get("TORCH_EXT_BUILD_DIR") or ROOT / "build")
        build_dir.mkdir(parents=True, exist_ok=True)
        out_dir = Path(self.get_ext_fullpath(ext.name)).resolve().parent
        out_dir.mkdir(parents=True, exist_ok=True)
        cfg = config.get("TORCH_EXT_BUILD_TYPE")
        args = [
            "cmake",
            "-S",
            str(ROOT),
            "-B",
            str(build_dir),
            "-G",
            "Ninja",
            f"-DCMAKE_BUILD_TYPE={cfg}",
            f"-DCMAKE_PREFIX_PATH={torch.utils.cmake_prefix_path}",
            f"-DPython3_EXECUTABLE={sys.executable}",
            f"-DTORCH_EXT_OUTPUT_DIR={out_dir}",
        ]
        # Always passed, so a value from an earlier build never sticks in the cache.
        manifest = config.get("TORCH_EXT_MANIFEST") or ROOT / "musa_functions.yaml"
        args.append(f"-DTORCH_EXT_MANIFEST={Path(manifest).resolve()}")
        extra = config.get("TORCH_EXT_EXTRA_CSRC")
        args.append(f"-DTORCH_EXT_EXTRA_CSRC={Path(extra).resolve() if extra else ''}")
        args.append(f"-DTORCH_EXT_NAMESPACE={config.get('TORCH_EXT_NAMESPACE')}")
        args.append(f"-DTORCH_EXT_GLUE_OPT={config.get('TORCH_EXT_GLUE_OPT') or ''}")
        subprocess.check_call(args)
        jobs = str(config.get("MAX_JOBS") or os.cpu_count() or 2)
        subprocess.check_call(["cmake", "--build", str(build_dir), "-j", jobs])


# Metadata, dependencies and packages are in pyproject.toml; this file only
# adds the CMake-built extension.
setup(
    ext_modules=[CMakeExtension("torch_ext._C")],
    cmdclass={"build_ext": CMakeBuild},
)
