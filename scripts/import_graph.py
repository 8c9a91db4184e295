"""The package's import graph, by folder: which folder imports which, what runs the wrong way.

    python scripts/import_graph.py            # report; exit 1 if an import runs upward, or folders or files loop
    python scripts/import_graph.py --modules  # also every module-to-module edge

Layers, lowest first (a module may import its own layer or a lower one, never a higher one):

    0  client                                   the Kafka admin client; no Airflow, no Spark
    1  arguments                                pure validators of user input (one per argument)
    2  lag offsets                              the lag engine; offset reset plans (strategies, CSV)
    3  history landing spark connect cleanup    storage, Spark jobs, Kafka Connect, the cleanup workflow
    4  hooks sensors triggers operators ui      the Airflow layer (the only one that may import airflow)
       get_provider_info settings               Airflow's provider metadata, the [kgroups] config section
       version_compat                           the running Airflow's version, shims common-compat lacks
       observability                            OpenLineage facets and Airflow metrics (Stats)
    5  cli __main__                             the command line

The package root (``__init__``) holds only the version: layer 0. A folder (or top-level module)
not listed here is reported as unplaced and fails the check: decide its layer and add it.

Every import counts, wherever it stands (module level, inside a function, under TYPE_CHECKING):
each is a dependency a reader has to follow. Only ``ast`` is used; nothing is imported or run.
"""

from __future__ import annotations

import ast
import sys
from collections import defaultdict
from pathlib import Path

PACKAGE = "airflow_provider_kgroups"
ROOT = Path(__file__).resolve().parent.parent / PACKAGE
LAYERS: dict[str, int] = {
    "(root)": 0,
    "client": 0,
    "arguments": 1,
    "lag": 2,
    "offsets": 2,
    "history": 3,
    "landing": 3,
    "spark": 3,
    "connect": 3,
    "cleanup": 3,
    "hooks": 4,
    "sensors": 4,
    "triggers": 4,
    "operators": 4,
    "ui": 4,
    "get_provider_info": 4,
    "settings": 4,
    "version_compat": 4,
    "observability": 4,
    "cli": 5,
    "__main__": 5,
}
AIRFLOW_LAYER = 4
LONG_FILE = 400


def module_name(path: Path, root: Path = ROOT) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join([PACKAGE, *parts])


def folder_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "(root)"


def imports_of(path: Path, module: str, modules: set[str]) -> tuple[set[str], set[str]]:
    """(package modules imported, top-level names of outside packages imported)."""
    tree = ast.parse(path.read_text(), str(path))
    is_package = path.name == "__init__.py"
    inside, outside = set(), set()

    def resolve(name: str) -> str | None:
        while name and name not in modules:  # ``from .x import func``: the longest module prefix
            name = name.rpartition(".")[0]
        return name or None

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.split(".")[0] == PACKAGE:
                    target = resolve(alias.name)
                    if target:
                        inside.add(target)
                else:
                    outside.add(alias.name.split(".")[0])
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = module.split(".")
                base = base[: len(base) - node.level + (1 if is_package else 0)]
                name = ".".join(base + ([node.module] if node.module else []))
            else:
                name = node.module or ""
            if name.split(".")[0] != PACKAGE:
                outside.add(name.split(".")[0])
                continue
            for alias in node.names:  # ``from .. import cli`` imports a module
                candidate = f"{name}.{alias.name}"
                target = candidate if candidate in modules else resolve(name)
                if target:
                    inside.add(target)
    inside.discard(module)
    return inside, outside


def scan(root: Path = ROOT):
    files = {module_name(p, root): p for p in sorted(root.rglob("*.py"))}
    modules = set(files)
    edges: dict[str, set[str]] = {}
    outside: dict[str, set[str]] = {}
    for module, path in files.items():
        edges[module], outside[module] = imports_of(path, module, modules)
    return files, edges, outside


def folder_cycles(folder_edges: dict[tuple[str, str], int]) -> list[list[str]]:
    """Strongly connected components with more than one folder."""
    return cycles(folder_edges)


def file_cycles(edges: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components with more than one module: files that import each other,
    directly or round a loop, even inside one folder (a package ``__init__`` counts as a file)."""
    return cycles((a, b) for a, targets in edges.items() for b in targets)


def cycles(pairs) -> list[list[str]]:
    """Strongly connected components of more than one node of the graph ``pairs`` (a, b: a
    imports b), each sorted, in the order found (Tarjan)."""
    graph: dict[str, set[str]] = defaultdict(set)
    for a, b in pairs:
        graph[a].add(b)
        graph.setdefault(b, set())
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = []
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.append(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(sorted(component))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def analyse(root: Path = ROOT) -> dict:
    files, edges, outside = scan(root)
    folder_edges: dict[tuple[str, str], int] = defaultdict(int)
    upward: list[tuple[str, str]] = []
    for module, targets in sorted(edges.items()):
        for target in sorted(targets):
            a, b = folder_of(module), folder_of(target)
            if a == b:
                continue
            folder_edges[(a, b)] += 1
            if a in LAYERS and b in LAYERS and LAYERS[b] > LAYERS[a]:
                upward.append((module, target))
    folders = {folder_of(m) for m in files}
    airflow_below = sorted(
        m
        for m, names in outside.items()
        if "airflow" in names and LAYERS.get(folder_of(m), AIRFLOW_LAYER) < AIRFLOW_LAYER
    )
    long_files = sorted(
        ((len(p.read_text().splitlines()), str(p.relative_to(root.parent))) for p in files.values()),
        reverse=True,
    )
    return {
        "edges": edges,
        "folder_edges": dict(folder_edges),
        "upward": upward,
        "cycles": folder_cycles(folder_edges),
        "file_cycles": file_cycles(edges),
        "unplaced": sorted(folders - set(LAYERS)),
        "airflow_below": airflow_below,
        "long_files": [(n, p) for n, p in long_files if n > LONG_FILE],
    }


def report(result: dict, modules: bool = False) -> str:
    lines = ["Folder imports (importer -> imported: number of module edges; layer in brackets):"]
    by_source: dict[str, list[str]] = defaultdict(list)
    for (a, b), n in sorted(result["folder_edges"].items()):
        by_source[a].append(f"{b}({n})")
    for a in sorted(by_source, key=lambda f: (LAYERS.get(f, 99), f)):
        lines.append(f"  {a} [{LAYERS.get(a, '?')}] -> {', '.join(by_source[a])}")
    lines.append(f"Upward imports (lower layer -> higher layer): {len(result['upward'])}")
    lines += [f"  {a} -> {b}" for a, b in result["upward"]]
    lines.append(f"Folder cycles: {len(result['cycles'])}")
    lines += ["  " + " <-> ".join(c) for c in result["cycles"]]
    lines.append(f"File cycles: {len(result['file_cycles'])}")
    lines += ["  " + " <-> ".join(m.removeprefix(PACKAGE + ".") for m in c) for c in result["file_cycles"]]
    if result["unplaced"]:
        lines.append(f"Unplaced folders (give them a layer in LAYERS): {', '.join(result['unplaced'])}")
    lines.append(f"Airflow imported below the Airflow layer: {len(result['airflow_below'])}")
    lines += [f"  {m}" for m in result["airflow_below"]]
    lines.append(f"Package files above {LONG_FILE} lines: {len(result['long_files'])}")
    lines += [f"  {n:5d}  {p}" for n, p in result["long_files"]]
    if modules:
        lines.append("Module edges:")
        for module, targets in sorted(result["edges"].items()):
            for target in sorted(targets):
                lines.append(
                    f"  {module.removeprefix(PACKAGE + '.')} -> {target.removeprefix(PACKAGE + '.')}"
                )
    return "\n".join(lines)


def ok(result: dict) -> bool:
    return not (
        result["upward"]
        or result["cycles"]
        or result["file_cycles"]
        or result["unplaced"]
        or result["airflow_below"]
    )


def main(argv: list[str]) -> int:
    result = analyse()
    print(report(result, modules="--modules" in argv))
    return 0 if ok(result) else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
