"""Run a snippet in a fresh interpreter with extra environment variables."""

import os
import subprocess
import sys
import textwrap

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run_python(code: str, timeout: float = 300, **env) -> subprocess.CompletedProcess:
    full_env = dict(os.environ)
    full_env.update({k: str(v) for k, v in env.items()})
    full_env["PYTHONPATH"] = ROOT + os.pathsep + full_env.get("PYTHONPATH", "")
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        env=full_env,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
