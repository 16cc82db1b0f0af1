"""The package's shape: layers that import downward only, no import cycle, no private
name imported across modules, and no class or function grown past what a reader can
hold (issues 28 and 46).

Read from the source with ``ast`` (and the compiled halves' ``.pyx``/``.pxd`` as text),
so the rules hold for the pure-Python path, for imports made inside functions and for
those under ``if TYPE_CHECKING:`` alike: an arrow a type checker follows is an arrow a
reader follows. A compiled module loaded by name (``compiled.load("_chost")``) is an
import of that module too.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest

from harvester import compiled

ROOT = Path(__file__).resolve().parents[2] / "harvester"
MAX_CLASS = 300
MAX_FUNCTION = 60
# A longer one must say why in a comment on its ``def`` line or the line above, with
# "long:": an exception someone chose, for a table read top to bottom (a dispatch on
# many cases, each a line or two) that splitting would only scatter.
WAIVER = "long:"

# The layers, lowest first (README.md, "Where things live", draws them). A module may
# import its own folder, the ground floor and any folder of a lower layer; the two
# folders of one layer import neither each other. The ground floor's modules may
# import one another (the cycle test keeps that acyclic). "harvester" is the package's
# own ``__init__`` (the public API); "__main__" is ``python -m harvester``.
GROUND = frozenset({"compiled", "config", "dates", "errors", "models", "version"})
LAYERS: tuple[frozenset[str], ...] = (
    GROUND,
    frozenset({"urls"}),  # URLs to canonical keys
    frozenset({"reader"}),  # bytes to entries (its locs checked by urls/)
    frozenset({"audit", "state"}),  # is lastmod true; the SQLite memory
    frozenset({"crawl"}),  # one host end to end
    frozenset({"output"}),  # a run's files and their one writer
    frozenset({"run"}),  # many hosts: seeds, admission, shards, workers
    # shards on Dask; tables; what a person reads; sitemap coverage
    frozenset({"distributed", "frames", "view", "coverage"}),
    frozenset({"cli", "harvester"}),  # the verbs; the public API
    frozenset({"__main__"}),
)
LAYER = {name: i for i, layer in enumerate(LAYERS) for name in layer}


def _modules() -> dict[str, Path]:
    out: dict[str, Path] = {}
    # A compiled half's .pyx stands for it (its .pxd's imports are read with it, _graph).
    for suffix in (".py", ".pyx", ".pxd"):
        for path in sorted(ROOT.rglob(f"*{suffix}")):
            rel = path.relative_to(ROOT.parent).with_suffix("")
            parts = list(rel.parts)
            if parts[-1] == "__init__":
                parts.pop()
            out.setdefault(".".join(parts), path)
    return out


MODULES = _modules()
PYTHON = {name: path for name, path in MODULES.items() if path.suffix == ".py"}


def folder(module: str) -> str:
    """The folder (layer unit) of a module: ``harvester.crawl.host`` → ``crawl``;
    a module of the package's top, ``harvester.errors`` → ``errors`` (a compiled half
    there is its Python half's: ``harvester._cdates`` → ``dates``)."""
    parts = module.split(".")
    if len(parts) == 2 and parts[1].startswith("_c") and f"harvester.{parts[1][2:]}" in MODULES:
        return parts[1][2:]
    return parts[1] if len(parts) > 1 else parts[0]


def _type_checking_block(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and (
        (isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING")
        or (isinstance(node.test, ast.Attribute) and node.test.attr == "TYPE_CHECKING")
    )


def _resolve(module: str, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    package = module.split(".")
    is_package = MODULES[module].name == "__init__.py"
    base = package if is_package else package[:-1]
    base = base[: len(base) - (node.level - 1)]
    return ".".join([*base, *([node.module] if node.module else [])])


def _loaded(node: ast.AST) -> str | None:
    """``compiled.load("_cname")`` → the module it loads (by ``compiled.module_path``)."""
    if (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr == "load"
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "compiled"
        and node.args
        and isinstance(node.args[0], ast.Constant)
        and node.args[0].value in compiled.PACKAGES
    ):
        return compiled.module_path(node.args[0].value)
    return None


def _python_imports(name: str, source: str) -> dict[str, bool]:
    """What module ``name`` imports → whether only under ``if TYPE_CHECKING:``."""
    found: dict[str, bool] = {}

    def add(targets: list[str], typing_only: bool) -> None:
        for target in targets:
            # A package above ``name`` (``harvester`` of ``from harvester import
            # compiled``) runs before any of its modules anyway: no arrow of its own.
            # A package's ``__init__`` importing its modules is an arrow, so a cycle
            # through it (crawl.headers -> config -> config.crawl -> ...) is one.
            if target in MODULES and target != name and not name.startswith(target + "."):
                found[target] = found.get(target, True) and typing_only

    def visit(node: ast.AST, typing_only: bool) -> None:
        for child in ast.iter_child_nodes(node):
            inside = typing_only or _type_checking_block(child)
            if isinstance(child, ast.Import):
                add([a.name for a in child.names], inside)
            elif isinstance(child, ast.ImportFrom):
                source_module = _resolve(name, child)
                # ``from harvester.cli import run``: the submodule, when it is one.
                add([source_module, *(f"{source_module}.{a.name}" for a in child.names)], inside)
            elif (loaded := _loaded(child)) is not None:
                add([loaded], inside)
            visit(child, inside)

    visit(ast.parse(source), False)
    return found


# A compiled half's imports: ``from harvester.x import y``, ``from harvester.x cimport y``,
# ``import harvester.x`` and ``cimport harvester.x``.
_PYX_IMPORT = re.compile(
    r"^\s*(?:from\s+(harvester[\w.]*)\s+c?import\s+([\w, ()]+)|c?import\s+(harvester[\w.]*))",
    re.MULTILINE,
)


def _pyx_imports(name: str, source: str) -> dict[str, bool]:
    found: dict[str, bool] = {}
    for match in _PYX_IMPORT.finditer(source):
        base = match[1] or match[3]
        names = [n.strip(" ()") for n in (match[2] or "").split(",")]
        for target in [base, *(f"{base}.{n}" for n in names if n)]:
            if target in MODULES and target != name:
                found[target] = False
    return found


def _graph() -> dict[str, dict[str, bool]]:
    """Every module → the modules it imports → whether for type checking only."""
    graph = {}
    for name, path in MODULES.items():
        read = _python_imports if path.suffix == ".py" else _pyx_imports
        imports = read(name, path.read_text())
        if path.suffix == ".pyx" and path.with_suffix(".pxd").exists():
            imports |= _pyx_imports(name, path.with_suffix(".pxd").read_text())
        graph[name] = imports
    return graph


GRAPH = _graph()


def _cycle(graph: dict[str, set[str]]) -> list[str] | None:
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for dep in sorted(graph[node]):
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


def _folder_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    folders: dict[str, set[str]] = {}
    for node, deps in graph.items():
        here = folders.setdefault(folder(node), set())
        here.update(folder(d) for d in deps if folder(d) != folder(node))
    return folders


def _upward(graph: dict[str, set[str]]) -> list[str]:
    """Every import that does not point down the layers: ``a -> b (why)``."""
    bad = []
    for node, deps in sorted(graph.items()):
        here = folder(node)
        for dep in sorted(deps):
            there = folder(dep)
            if there == here or there in GROUND:
                continue  # its own folder; the ground floor is everyone's (its own too)
            if here in GROUND:
                bad.append(f"{node} -> {dep} (the ground floor imports no layer)")
            elif LAYER[there] >= LAYER[here]:
                side = "beside" if LAYER[there] == LAYER[here] else "above"
                bad.append(f"{node} -> {dep} ({there}/ is {side} {here}/)")
    return bad


def _edges(graph: dict[str, dict[str, bool]]) -> dict[str, set[str]]:
    return {node: set(deps) for node, deps in graph.items()}


def test_the_module_list_is_read() -> None:
    assert "harvester.run.shards" in MODULES
    assert "harvester.cli" in MODULES
    assert "harvester.crawl._chost" in MODULES
    assert len(PYTHON) > 40
    # The three kinds of arrows are all seen: runtime, type checking, compiled by name.
    assert GRAPH["harvester.crawl.host"]["harvester.crawl.batch"] is False
    assert GRAPH["harvester.crawl.host"]["harvester.crawl.fetch"] is True
    assert "harvester._cdates" in GRAPH["harvester.dates"]
    assert "harvester.urls._cdedupe" in GRAPH["harvester.crawl._chost"]
    assert MODULES["harvester.reader._cparse"].suffix == ".pyx"
    assert "harvester.reader._cwalk" in GRAPH["harvester.reader._cparse"]  # (cimported)
    assert "harvester._cdates" in GRAPH["harvester.reader._cparse"]


def test_every_folder_is_in_a_layer() -> None:
    assert {folder(name) for name in MODULES} <= set(LAYER)
    assert set(LAYER) <= {folder(name) for name in MODULES}


def test_no_import_points_up_or_sideways() -> None:
    assert _upward(_edges(GRAPH)) == []


def test_no_import_cycle_between_modules() -> None:
    assert _cycle(_edges(GRAPH)) is None


def test_no_import_cycle_between_folders() -> None:
    assert _cycle(_folder_graph(_edges(GRAPH))) is None


def test_the_checks_find_what_they_look_for() -> None:
    assert _cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert _cycle({"a": {"b"}, "b": set()}) is None
    tangled = {"harvester.crawl.host": {"harvester.run.shards"}, "harvester.run.shards": set()}
    assert _upward(tangled) == [
        "harvester.crawl.host -> harvester.run.shards (run/ is above crawl/)"
    ]
    beside = {"harvester.state.store": {"harvester.audit.trust"}}
    assert _upward(beside) == [
        "harvester.state.store -> harvester.audit.trust (audit/ is beside state/)"
    ]
    ground = {"harvester.config.crawl": {"harvester.crawl.headers"}}
    assert _upward(ground) == [
        "harvester.config.crawl -> harvester.crawl.headers (the ground floor imports no layer)"
    ]
    assert _folder_graph(
        {"harvester.a.x": {"harvester.b.y"}, "harvester.b.y": {"harvester.a.z"}}
    ) == {
        "a": {"b"},
        "b": {"a"},
    }
    source = (
        "if TYPE_CHECKING:\n    from harvester.run.shards import Beside\n"
        "x = compiled.load('_chost')\n"
    )
    assert _python_imports("harvester.crawl.host", source) == {
        "harvester.run.shards": True,
        "harvester.crawl._chost": False,
    }
    pyx = (
        "from harvester.urls.records import encode_record, record\n"
        "from harvester._cdates cimport _w3c\n"
    )
    assert set(_pyx_imports("harvester.crawl._chost", pyx)) == {
        "harvester.urls.records",
        "harvester._cdates",
    }


# The first sentence of the paragraph that starts "May import:".
_MAY_IMPORT = re.compile(r"^May import:(.*?\.)(?:\s|\Z)", re.MULTILINE | re.DOTALL)


@pytest.mark.parametrize("name", sorted(n for n in LAYER if (ROOT / n / "__init__.py").exists()))
def test_each_folder_says_what_it_owns_and_what_it_may_import(name: str) -> None:
    # Its __init__'s docstring names the layers below it (the ground floor in words):
    # the table here and the words there cannot drift apart.
    doc = ast.get_docstring(ast.parse((ROOT / name / "__init__.py").read_text())) or ""
    said = _MAY_IMPORT.search(doc)
    assert said is not None, f"{name}/__init__.py says nothing of what it may import"
    below = {f for f in LAYER if f not in GROUND and LAYER[f] < LAYER[name]}
    assert set(re.findall(r"``(\w+)/?``", said[1])) == below
    assert "ground floor" in said[1]


TESTS = ROOT.parent / "tests"


def test_no_test_module_is_a_helper_library() -> None:
    # Issue 46 item 7: what tests share (loopback webs, documents, strategies) is in
    # helper modules (tests/integration/webs.py, tests/strategies.py, ...); a test
    # module imported by others runs its tests' imports and fixtures in every importer.
    bad = [
        f"{path.relative_to(TESTS.parent)}: from {node.module}"
        for path in sorted(TESTS.rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.ImportFrom)
        and (node.module or "").startswith("tests.")
        and (node.module or "").rsplit(".", 1)[-1].startswith("test_")
    ]
    assert bad == []


@pytest.mark.parametrize("name", sorted(PYTHON))
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


# Issue 46 item 5: below output/, no function takes the whole ``Config``, so that a
# component's signature names what it reads; a settings object's ``of`` reads the config
# (once per shard) and the components take the settings or a section.
_CONFIG_FREE = frozenset({"audit", "crawl", "reader", "state", "urls"})


def _takes_config(path: Path) -> list[str]:
    out = []
    for node in ast.walk(ast.parse(path.read_text())):
        if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) or node.name == "of":
            continue
        args = [*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs]
        for arg in args:
            if arg.annotation is not None and "Config" in re.findall(
                r"\w+", ast.unparse(arg.annotation)
            ):
                out.append(f"{path.name}:{node.lineno} {node.name}({arg.arg}: Config)")
    return out


@pytest.mark.parametrize("name", sorted(n for n in PYTHON if folder(n) in _CONFIG_FREE))
def test_no_component_below_the_output_takes_the_whole_config(name: str) -> None:
    assert _takes_config(MODULES[name]) == []


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


# Issue 46 left these to the changes that own them this round: each test fails (strict
# xfail) once they are split, to be taken off this list.
_PENDING: dict[str, str] = {}


def _pending(name: str) -> object:
    reason = _PENDING.get(name)
    return pytest.param(name, marks=pytest.mark.xfail(strict=True, reason=reason or ""))


@pytest.mark.parametrize("name", [_pending(n) if n in _PENDING else n for n in sorted(PYTHON)])
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
    assert len(PYX) >= 9
    sample = "def f(x):\n    y = 1\n\n    return y\ncdef int g(int a) nogil:\n" + "    a\n" * 61
    path = tmp_path / "_probe.pyx"
    path.write_text(sample)
    assert _too_long_pyx(path) == ["_probe.pyx:5 g: 62 lines > 60"]


@pytest.mark.parametrize("path", [_pending(p.name) if p.name in _PENDING else p.name for p in PYX])
def test_no_compiled_class_or_function_is_too_long(path: str) -> None:
    assert not _too_long_pyx(next(p for p in PYX if p.name == path))
