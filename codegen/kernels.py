"""The kernels the manifest may name, read from their declarations in the source.

A kernel is declared in torch_ext/ops/ with `@kernel()` (its function's name, or the
`name` attribute of a `@pointwise` object: the same) or `@kernel("name")`, or called
as `kernel("name")(obj)` (torch_ext/ops/_declare.py). Generating C++ only needs the
names, so they are read with `ast` from the files: no kernel is imported, no Triton
code runs at build time. The declarations' keyword arguments (constants) come along
as each kernel's metadata.
"""

from __future__ import annotations

import ast
import functools
import importlib.util
from dataclasses import dataclass, field
from pathlib import Path

OPS_DIR = Path(__file__).resolve().parent.parent / "torch_ext" / "ops"


@dataclass(frozen=True)
class Declaration:
    name: str
    path: Path
    line: int
    info: dict = field(default_factory=dict, compare=False, hash=False)


def _is_kernel_call(node: ast.AST) -> bool:
    if not isinstance(node, ast.Call):
        return False
    f = node.func
    return (isinstance(f, ast.Name) and f.id == "kernel") or (
        isinstance(f, ast.Attribute) and f.attr == "kernel"
    )


def _info(call: ast.Call, path: Path) -> dict:
    try:
        return {k.arg: ast.literal_eval(k.value) for k in call.keywords if k.arg}
    except ValueError as e:
        raise ValueError(f"{path}:{call.lineno}: a kernel's metadata must be constants") from e


def declarations_in(path: Path) -> list[Declaration]:
    """Every kernel declared in one Python file."""
    tree = ast.parse(path.read_text(), filename=str(path))
    found = []
    decorated = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for d in node.decorator_list:
                if _is_kernel_call(d):
                    decorated.add(id(d))
                    name = d.args[0].value if d.args else node.name
                    found.append(Declaration(name, path, d.lineno, _info(d, path)))
    for node in ast.walk(tree):
        if _is_kernel_call(node) and id(node) not in decorated:
            if not (node.args and isinstance(node.args[0], ast.Constant)):
                raise ValueError(f"{path}:{node.lineno}: kernel(...) needs its name as a string")
            found.append(Declaration(node.args[0].value, path, node.lineno, _info(node, path)))
    return found


@functools.lru_cache(maxsize=None)
def declared(ops_dir: Path = OPS_DIR) -> dict[str, Declaration]:
    """name -> declaration, over every file of the op library; a name declared twice
    is an error (the registry would refuse it at import too)."""
    out: dict[str, Declaration] = {}
    for path in sorted(ops_dir.rglob("*.py")):
        for d in declarations_in(path):
            if d.name in out:
                first = out[d.name]
                raise ValueError(
                    f"kernel '{d.name}' is declared twice: {first.path}:{first.line} "
                    f"and {d.path}:{d.line}"
                )
            out[d.name] = d
    return out


def exists(name: str) -> bool:
    """Whether a manifest's `triton:` value names a kernel: a declared name, or a
    `package.module:attribute` whose module file defines that attribute at top level
    (read without importing it where the file can be found)."""
    if ":" not in name:
        return name in declared()
    module, _, attr = name.partition(":")
    path = _module_file(module)
    if path is None:  # not locatable as a file (e.g. os.path): ask the module itself
        try:
            return hasattr(importlib.import_module(module), attr)
        except ImportError:
            return False
    tree = ast.parse(path.read_text())
    for node in tree.body:
        if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name == attr:
            return True
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == attr for t in node.targets
        ):
            return True
    return False


def _module_file(module: str) -> Path | None:
    """The source file of a dotted module name, found without importing any package
    on the way (find_spec of a submodule would import its parents)."""
    top, *rest = module.split(".")
    try:
        spec = importlib.util.find_spec(top)
    except (ImportError, ValueError):
        return None
    if spec is None or not spec.origin or not spec.origin.endswith(".py"):
        return None
    path = Path(spec.origin)
    for part in rest:
        if path.name != "__init__.py":
            return None
        pkg = path.parent / part / "__init__.py"
        path = pkg if pkg.exists() else path.parent / f"{part}.py"
        if not path.exists():
            return None
    return path
