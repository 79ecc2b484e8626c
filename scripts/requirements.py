"""Prints, one per line, the requirements pyproject.toml declares for the named groups
(`build`, `runtime`, or an optional-dependency extra such as `test`), without torch:
scripts/setup.sh installs torch first, pinned, and everything else from this list."""

import sys
from pathlib import Path

try:
    import tomllib
except ImportError:  # Python 3.10
    from pip._vendor import tomli as tomllib


def requirements(groups: list[str]) -> list[str]:
    project = tomllib.loads((Path(__file__).parent.parent / "pyproject.toml").read_text())
    reqs: list[str] = []
    for group in groups:
        if group == "build":
            reqs += project["build-system"]["requires"]
        elif group == "runtime":
            reqs += project["project"]["dependencies"]
        else:
            reqs += project["project"]["optional-dependencies"][group]
    return [r for r in dict.fromkeys(reqs) if not r.split(">")[0].split("=")[0] == "torch"]


if __name__ == "__main__":
    print("\n".join(requirements(sys.argv[1:])))
