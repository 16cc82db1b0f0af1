"""The package's shape: no import cycle, no private name imported across modules, and
no class or function grown past what a reader can hold (issue 28's rules).

Read from the source with ``ast``, so the rules hold for the pure-Python path and
for imports made inside functions (a cycle hidden there is still a cycle).
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2] / "harvester"
MAX_CLASS = 400
MAX_FUNCTION = 80
# A longer one must say why in a comment on its ``def`` line or the line above, with
# "long:" (a dispatch table read top to bottom, say): an exception someone chose.
WAIVER = "long:"


def _modules() -> dict[str, Path]:
    out = {}
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT.parent).with_suffix("")
        parts = list(rel.parts)
        if parts[-1] == "__init__":
            parts.pop()
        out[".".join(parts)] = path
    return out


MODULES = _modules()


def _type_checking_block(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and (
        (isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING")
        or (isinstance(node.test, ast.Attribute) and node.test.attr == "TYPE_CHECKING")
    )


def _imports(tree: ast.AST) -> list[ast.Import | ast.ImportFrom]:
    """Every import statement run at some point: at module level or in a function, but
    not under ``if TYPE_CHECKING:`` (those never run)."""
    found: list[ast.Import | ast.ImportFrom] = []

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if _type_checking_block(child):
                continue
            if isinstance(child, ast.Import | ast.ImportFrom):
                found.append(child)
            visit(child)

    visit(tree)
    return found


def _resolve(module: str, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    package = module.split(".")
    is_package = MODULES[module].name == "__init__.py"
    base = package if is_package else package[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


def _graph() -> dict[str, set[str]]:
    graph: dict[str, set[str]] = {}
    for name, path in MODULES.items():
        deps: set[str] = set()
        for node in _imports(ast.parse(path.read_text())):
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                source = _resolve(name, node)
                targets = [source]
                # ``from harvester.cli import run``: the submodule, when it is one.
                targets += [f"{source}.{a.name}" for a in node.names]
            deps.update(t for t in targets if t in MODULES and t != name)
        graph[name] = deps
    return graph


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for dep in sorted(graph[node]):
            # A package importing its own submodules is how packages are made, and a
            # submodule importing its package's siblings through it is not a cycle
            # of code: only edges between modules proper count.
            if node.startswith(dep + ".") or dep.startswith(node + "."):
                continue
            if state.get(dep) == 1:
                return [*path[path.index(dep) :], dep]
            if dep not in state and (found := visit(dep)):
                return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state and (found := visit(node)):
            return found
    return None


def test_the_module_list_is_read() -> None:
    assert "harvester.run.shards" in MODULES
    assert "harvester.cli" in MODULES
    assert len(MODULES) > 40


def test_no_import_cycle() -> None:
    assert _cycle(_graph()) is None


def test_the_cycle_finder_finds_one() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None


@pytest.mark.parametrize("name", sorted(MODULES))
def test_no_private_name_is_imported_from_another_module(name: str) -> None:
    tree = ast.parse(MODULES[name].read_text())
    bad = [
        f"line {node.lineno}: from {node.module} import {alias.name}"
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("harvester")
        for alias in node.names
        if alias.name.startswith("_") and not alias.name.startswith("__")
    ]
    assert not bad, "\n".join(bad)


def _too_long(path: Path) -> list[str]:
    lines = path.read_text().splitlines()
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ClassDef):
            limit = MAX_CLASS
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            limit = MAX_FUNCTION
        else:
            continue
        assert node.end_lineno is not None
        length = node.end_lineno - node.lineno + 1
        first = node.decorator_list[0].lineno if node.decorator_list else node.lineno
        said = any(WAIVER in lines[i - 1] for i in range(max(1, first - 1), node.lineno + 1))
        if length > limit and not said:
            out.append(f"{path.name}:{node.lineno} {node.name}: {length} lines > {limit}")
    return out


@pytest.mark.parametrize("name", sorted(MODULES))
def test_no_class_or_function_is_too_long(name: str) -> None:
    assert not _too_long(MODULES[name])


# The compiled halves, read as text (Cython is no Python ``ast`` can parse): a ``def``,
# ``cdef`` or ``cpdef`` function or a class runs until the next line indented no deeper.
_PYX_DEF = re.compile(r"^(\s*)(?:async\s+)?(?:cpdef|cdef|def)\s+(?:[\w\[\], .*]+\s+)?(\w+)\s*\(")
_PYX_CLASS = re.compile(r"^(\s*)(?:cdef\s+)?class\s+(\w+)")
PYX = sorted(ROOT.rglob("*.pyx"))


def _too_long_pyx(path: Path) -> list[str]:
    lines = path.read_text().splitlines()
    out = []
    for i, line in enumerate(lines):
        match = _PYX_CLASS.match(line) or _PYX_DEF.match(line)
        if match is None:
            continue
        indent = len(match.group(1))
        end = i
        for j in range(i + 1, len(lines)):
            text = lines[j]
            if not text.strip() or text.lstrip().startswith("#"):
                continue
            if len(text) - len(text.lstrip()) <= indent and not text.lstrip().startswith(")"):
                break
            end = j
        limit = MAX_CLASS if _PYX_CLASS.match(line) else MAX_FUNCTION
        said = any(WAIVER in lines[k] for k in range(max(0, i - 1), i + 1))
        if end - i + 1 > limit and not said:
            out.append(f"{path.name}:{i + 1} {match.group(2)}: {end - i + 1} lines > {limit}")
    return out


def test_the_compiled_halves_are_read(tmp_path: Path) -> None:
    assert len(PYX) >= 8
    sample = "def f(x):\n    y = 1\n\n    return y\ncdef int g(int a) nogil:\n" + "    a\n" * 81
    path = tmp_path / "_probe.pyx"
    path.write_text(sample)
    assert _too_long_pyx(path) == ["_probe.pyx:5 g: 82 lines > 80"]


@pytest.mark.parametrize("path", PYX, ids=lambda p: p.name)
def test_no_compiled_class_or_function_is_too_long(path: Path) -> None:
    assert not _too_long_pyx(path)
