"""The house's import graph, read from the source with `ast` (nothing is imported), and the checks
the guard tests make on it: circles, imports that point up the layers, private members used
across modules, vendor tests, module sizes.

The graph is read as the project's house check (house.py) reads it, so the two agree:
- every import counts: one inside a function (it still runs, only later) and one under
  `if TYPE_CHECKING:` (it never runs, but a reader must follow it as much as any other);
- `from .x import y` imports `x`, and `x.y` too when that is a module;
- an import that resolves to a package imports its `__init__`;
- an import from a module into the `__init__` of a package that contains it is no edge: Python
  has run that `__init__` before the module, and `from . import x` names a sibling, not the
  package's code;
- migrations are not read.
"""

from __future__ import annotations

import ast
import re
from collections import deque
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

# How house.py recognises code that tests a database vendor: `connection.vendor == ...`,
# `.vendor != ...`, `.vendor in (...)`, or `vendor == "mysql"`.
VENDOR_TEST = re.compile(r"\.vendor\s*(==|!=|in\b)|vendor\s*==\s*['\"]")


@dataclass(frozen=True)
class Module:
    """One module of the package: its dotted name, its file (also relative to the package's
    parent, as `pkg/sub/mod.py`), its source and whether it is a package's `__init__`."""

    name: str
    path: Path
    relative: str
    source: str
    is_package: bool

    @property
    def lines(self) -> int:
        return len(self.source.splitlines())


@dataclass(frozen=True)
class Edge:
    """`source` imports `target` at `line` of the source's file."""

    source: str
    target: str
    line: int

    def __str__(self) -> str:
        return f"{self.source} imports {self.target} (line {self.line})"


Graph = Mapping[str, Mapping[str, Edge]]  # source -> target -> the first import of it


def read_package(package_dir: Path) -> dict[str, Module]:
    """Every module of the package in `package_dir` (its name is the folder's), by dotted name."""
    modules: dict[str, Module] = {}
    root = package_dir.parent
    for path in sorted(package_dir.rglob("*.py")):
        relative = path.relative_to(root)
        if "migrations" in relative.parts:
            continue
        parts = list(relative.with_suffix("").parts)
        is_package = parts[-1] == "__init__"
        if is_package:
            parts.pop()
        name = ".".join(parts)
        modules[name] = Module(name, path, relative.as_posix(), path.read_text(), is_package)
    return modules


def _import_nodes(tree: ast.AST) -> Iterable[ast.Import | ast.ImportFrom]:
    """Every import statement, at any depth, `if TYPE_CHECKING:` blocks included."""
    for node in ast.walk(tree):
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node


def _named_targets(module: Module, node: ast.Import | ast.ImportFrom) -> list[str]:
    """The dotted names an import statement names (modules or not)."""
    if isinstance(node, ast.Import):
        return [alias.name for alias in node.names]
    if node.level:
        base = module.name.split(".")
        if not module.is_package:
            base.pop()
        if node.level > 1:
            base = base[: len(base) - (node.level - 1)]
        target = ".".join([*base, *([node.module] if node.module else [])])
    else:
        target = node.module or ""
    return [target, *(f"{target}.{alias.name}" for alias in node.names)]


def _contains(package: str, name: str) -> bool:
    return name.startswith(package + ".")


def import_graph(modules: Mapping[str, Module]) -> dict[str, dict[str, Edge]]:
    """Which module of `modules` imports which other, with the line of its first import."""
    graph: dict[str, dict[str, Edge]] = {}
    for name, module in modules.items():
        edges: dict[str, Edge] = {}
        for node in _import_nodes(ast.parse(module.source, str(module.path))):
            for target in _named_targets(module, node):
                if target == name or target not in modules:
                    continue
                if modules[target].is_package and _contains(target, name):
                    continue  # the importer's own package's __init__, already run
                if target not in edges or node.lineno < edges[target].line:
                    edges[target] = Edge(name, target, node.lineno)
        graph[name] = edges
    return graph


def _components(graph: Graph) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, targets = work[-1]
            for target in targets:
                if target not in index:
                    index[target] = low[target] = len(index)
                    stack.append(target)
                    on_stack.add(target)
                    work.append((target, iter(sorted(graph[target]))))
                    break
                if target in on_stack:
                    low[node] = min(low[node], index[target])
            else:
                work.pop()
                if work:
                    low[work[-1][0]] = min(low[work[-1][0]], low[node])
                if low[node] == index[node]:
                    component = []
                    while True:
                        member = stack.pop()
                        on_stack.discard(member)
                        component.append(member)
                        if member == node:
                            break
                    if len(component) > 1:
                        found.append(sorted(component))
    return sorted(found)


def shortest_path(
    graph: Graph, start: str, goal: str, within: set[str] | None = None
) -> list[Edge]:
    """The fewest imports that lead from `start` to `goal` (through `within` only, if given);
    empty when none does."""
    came_by: dict[str, Edge] = {}
    queue = deque([start])
    seen = {start}
    while queue:
        node = queue.popleft()
        for target, edge in sorted(graph[node].items()):
            if target == goal:
                path = [edge]
                while path[0].source != start:
                    path.insert(0, came_by[path[0].source])
                return path
            if target not in seen and (within is None or target in within):
                seen.add(target)
                came_by[target] = edge
                queue.append(target)
    return []


@dataclass(frozen=True)
class Circle:
    """A group of modules that import each other, and one circle of imports through them."""

    modules: list[str]
    imports: list[Edge]

    def __str__(self) -> str:
        names = " -> ".join([self.imports[0].source, *(edge.target for edge in self.imports)])
        return (
            f"{len(self.modules)} modules import each other: {', '.join(self.modules)}\n"
            f"  for one: {names}" + "".join(f"\n    {edge}" for edge in self.imports)
        )


def circles(graph: Graph) -> list[Circle]:
    """Each group of modules that import each other, with the shortest circle of imports from the
    group's first module by name."""
    return [
        Circle(group, shortest_path(graph, group[0], group[0], set(group)))
        for group in _components(graph)
    ]


def in_layer(name: str, layer: str) -> bool:
    """Whether module `name` is `layer` or lies inside the package `layer`."""
    return name == layer or _contains(layer, name)


def layer_of(name: str, layers: Sequence[Iterable[str]]) -> int | None:
    """The index in `layers` (each a list of modules or packages) of the one that holds `name`
    most closely: the longest entry that is `name` or contains it wins, so a module named on
    its own sits in its layer whatever its package's. The top package's name stands for its
    `__init__` alone."""
    best: tuple[int, int] | None = None
    for index, layer in enumerate(layers):
        for entry in layer:
            holds = name == entry if "." not in entry else in_layer(name, entry)
            if holds and (best is None or len(entry) > best[1]):
                best = (index, len(entry))
    return None if best is None else best[0]


def upward_imports(graph: Graph, layers: Sequence[Iterable[str]]) -> list[Edge]:
    """Every import of a module by a module of a lower layer of `layers` (listed from the
    ground up), and every import by or of a module that no layer holds."""
    found = []
    for source, edges in sorted(graph.items()):
        for target, edge in sorted(edges.items()):
            low, high = layer_of(source, layers), layer_of(target, layers)
            if low is None or high is None or high > low:
                found.append(edge)
    return found


def unplaced(modules: Iterable[str], layers: Sequence[Iterable[str]]) -> list[str]:
    """The modules that no layer of `layers` holds."""
    return sorted(name for name in modules if layer_of(name, layers) is None)


def _defined_names(tree: ast.AST) -> set[str]:
    """The names a module defines: its functions, classes, assigned names and attributes
    (`self._x = ...`), and its classes' and functions' parameters."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
    return names


def _is_private(name: str) -> bool:
    return name.startswith("_") and not name.startswith("__")


def private_members(
    modules: Mapping[str, Module], under: Iterable[str], allowed: Iterable[str] = ()
) -> list[str]:
    """`path:line: name` of each private member (one leading underscore) that a module of the
    packages `under` uses but does not define: an attribute (`x._lock`) or an imported name
    (`from .x import _helper`). `allowed`: the few private names of Django's own that the
    store relies on (`Model._meta`)."""
    allowed = set(allowed)
    found = []
    for module in modules.values():
        if not any(in_layer(module.name, package) for package in under):
            continue
        tree = ast.parse(module.source, str(module.path))
        defined = _defined_names(tree)
        for node in ast.walk(tree):
            if isinstance(node, ast.Attribute):
                used = [node.attr] if node.attr not in defined else []
            elif isinstance(node, ast.ImportFrom):
                used = [alias.name for alias in node.names]
            else:
                continue
            for name in used:
                if _is_private(name) and name not in allowed:
                    found.append(f"{module.relative}:{node.lineno}: {name}")
    return sorted(set(found))


def vendor_tests(modules: Mapping[str, Module], allowed_under: str) -> list[str]:
    """`path:line: code` of every vendor test outside the folder `allowed_under` (relative to the
    package's parent, such as `pkg/store/backends/`)."""
    found = []
    for module in modules.values():
        if module.relative.startswith(allowed_under):
            continue
        for match in VENDOR_TEST.finditer(module.source):
            number = module.source.count("\n", 0, match.start()) + 1
            line = module.source.splitlines()[number - 1].strip()
            found.append(f"{module.relative}:{number}: {line}")
    return found


def oversized(modules: Mapping[str, Module], limit: int) -> list[str]:
    """`path: n lines` of every module longer than `limit` lines."""
    return [
        f"{module.relative}: {module.lines} lines"
        for module in modules.values()
        if module.lines > limit
    ]
