"""The import structure of netsim/, algorithms/ and topologies/ (docs/architecture.md, "The
layers"): no import cycle between modules, and no import that goes up the layer order.

Every import statement counts: at module level, inside a function, under ``TYPE_CHECKING``. An
import names the module it reads (``from netsim.sim import engine`` and ``from netsim.sim.engine
import X`` both name ``netsim.sim.engine``; ``from netsim.data import X`` names the package
``netsim.data``), except a name a package exports lazily through a literal map
(``lazy_getattr(__name__, {...})``, netsim/util/lazy.py): ``from netsim import run`` names
``netsim.running.runner``. What ``algorithms/__init__.py`` imports by ``importlib`` (every algorithm
module, to register it) is no import statement and is not counted.

A module's layer is the entry of :data:`LAYERS` naming its file, or else the longest entry naming
a folder above it; a module of no layer fails, so a new module is placed on purpose. It may import
modules of its own layer and of the layers below; :data:`EXCEPTIONS` would list the imports
allowed to go up, each with its reason (there are none).
"""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("netsim", "algorithms", "topologies")

#: the layers, bottom to top: (name, the files and folders of its modules)
LAYERS = (
    ("utilities", ("netsim/__init__.py", "netsim/_version.py", "netsim/errors.py", "netsim/util/",
                   "netsim/schema/")),
    ("components", ("netsim/data/", "netsim/models/", "netsim/links/", "topologies/")),
    ("engine", ("netsim/sim/", "netsim/runtime/")),
    ("algorithms", ("algorithms/",)),
    ("scenario", ("netsim/scenario/",)),
    ("results", ("netsim/results/",)),
    ("analysis", ("netsim/analysis/", "netsim/plot/")),
    ("run", ("netsim/running/",)),
    ("interface", ("netsim/api.py", "netsim/cli/")),
)
#: (importer, imported) modules allowed to import up the layers, with the reason: none
EXCEPTIONS: dict[tuple[str, str], str] = {}


def _modules() -> dict[str, Path]:
    """Module name -> file of every module of :data:`PACKAGES`."""
    out = {}
    for package in PACKAGES:
        for path in (ROOT / package).rglob("*.py"):
            parts = path.relative_to(ROOT).with_suffix("").parts
            out[".".join(parts[:-1] if parts[-1] == "__init__" else parts)] = path
    return out


MODULES = _modules()


def _lazy_names(tree: ast.Module) -> dict[str, str]:
    """Name -> module of a package's literal ``lazy_getattr(__name__, {...})`` map."""
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "lazy_getattr"
                and isinstance(node.args[1], ast.Dict)):
            return ast.literal_eval(node.args[1])
    return {}


LAZY = {name: _lazy_names(ast.parse(path.read_text()))
        for name, path in MODULES.items() if path.name == "__init__.py"}


def _known(name: str) -> str | None:
    """The module of :data:`MODULES` that ``name`` (a module or a name in one) reads."""
    package, _, attr = name.rpartition(".")
    if attr in LAZY.get(package, {}):
        return LAZY[package][attr]
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _imports(module: str, path: Path) -> set[str]:
    """The modules of :data:`MODULES` that ``module`` imports, anywhere in its file."""
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found |= {_known(a.name) for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                up = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(up + ([node.module] if node.module else []))
            found |= {_known(f"{base}.{a.name}") for a in node.names}
    return found - {None, module}


GRAPH = {module: _imports(module, path) for module, path in MODULES.items()}


def _layer(module: str) -> int | None:
    """Index in :data:`LAYERS` of ``module``'s layer, None where no entry names it."""
    rel = MODULES[module].relative_to(ROOT).as_posix()
    best, depth = None, -1
    for i, (_, entries) in enumerate(LAYERS):
        for entry in entries:
            if rel == entry:
                return i
            if entry.endswith("/") and rel.startswith(entry) and len(entry) > depth:
                best, depth = i, len(entry)
    return best


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    out = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        for w in graph[v]:
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while not component or component[-1] != v:
                component.append(stack.pop())
            if len(component) > 1:
                out.append(sorted(component))
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_every_module_has_a_layer_and_every_entry_a_file():
    assert [m for m in MODULES if _layer(m) is None] == []
    entries = [e for _, layer in LAYERS for e in layer]
    assert [e for e in entries if not (ROOT / e).exists()] == []
    assert len(entries) == len(set(entries))


def test_the_tree_says_the_layers():
    """A layer is whole packages; netsim/ itself keeps at most 8 modules (the entry points, the
    version and the errors every layer raises)."""
    assert len(list((ROOT / "netsim").glob("*.py"))) <= 8
    for _, entries in LAYERS:
        assert all(e.endswith("/") or e.count("/") == 1 for e in entries), entries


def test_no_import_cycle():
    assert _cycles(GRAPH) == []


def test_no_import_goes_up_a_layer():
    names = [name for name, _ in LAYERS]
    up = [f"{m} ({names[_layer(m)]}) imports {d} ({names[_layer(d)]})"
          for m in sorted(GRAPH) for d in sorted(GRAPH[m])
          if _layer(d) > _layer(m) and (m, d) not in EXCEPTIONS]
    assert up == []
    assert all(_layer(d) > _layer(m) and d in GRAPH[m] for m, d in EXCEPTIONS)


def test_the_check_sees_function_level_and_lazy_imports():
    """The walk is not blind: imports inside functions and lazily exported names count."""
    assert "netsim.plot" in GRAPH["netsim.running.runner"]         # inside _finish
    assert "netsim.running.runner" in GRAPH["netsim.cli"]          # inside cmd_run
    assert _known("netsim.run") == "netsim.running.runner"
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
