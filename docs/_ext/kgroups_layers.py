"""Sphinx extension: ``.. kgroups-layers::``, the package's layers as a picture drawn at build time.

Everything in the picture comes from ``scripts/import_graph.py``, the script that checks the
layering (``tests/test_import_graph.py``): each folder's layer (``LAYERS``), the rows and their
words (the layer table of its docstring), where Airflow may be imported (``AIRFLOW_LAYER``) and
the imports between folders it finds in the code (``analyse()``, ``ast`` only). A folder added,
moved to another layer or importing another folder shows in the next build, so the picture
cannot drift from the code.

The SVG is written here, as text: no Graphviz binary (none on CI or Read the Docs builders) and
no extra package. It is inlined in the page so that it takes the theme's colours (light and
dark) and the theme's fonts; hovering a folder brings out its imports, and its tooltip lists them.
A folder of ``LAYERS`` that the docstring's table does not name or names in another layer, and a
folder the table names that ``LAYERS`` lacks, are build warnings (and so, with ``-W``, errors).
"""

from __future__ import annotations

import importlib.util
import math
import re
from dataclasses import dataclass, field
from html import escape
from pathlib import Path
from typing import Any

from docutils import nodes
from sphinx import addnodes
from sphinx.application import Sphinx
from sphinx.util import logging
from sphinx.util.docutils import SphinxDirective

logger = logging.getLogger(__name__)

SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "import_graph.py"

# geometry (px of the SVG's own coordinates)
BOX_H, BOX_PAD, BOX_GAP = 26, 10, 12
MONO_CHAR, TEXT_CHAR = 7.9, 6.6  # generous widths of a character: monospace 13 px, text 12 px
LEFT, DESC_GAP, MARGIN = 44, 26, 10
BAND_PAD, ROW_GAP, BAND_GAP = 10, 14, 34

#: a row of the docstring's layer table: "    4  hooks sensors ...   the Airflow layer (...)"
_ROW = re.compile(r"^ {4}(\d+)? +(\S+(?: \S+)*?) {2,}(\S.*)$")


def load_import_graph() -> Any:
    spec = importlib.util.spec_from_file_location("kgroups_import_graph", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@dataclass
class Row:
    layer: int
    folders: list[str]
    words: str


@dataclass
class Box:
    name: str
    layer: int
    x: float
    y: float
    w: float
    attach: dict[str, list[tuple[float, str]]] = field(default_factory=dict)

    @property
    def cx(self) -> float:
        return self.x + self.w / 2


def table_rows(graph: Any) -> tuple[list[Row], list[str]]:
    """The rows of the docstring's layer table, each folder in its ``LAYERS`` layer; and the
    problems found (a folder the table names in another layer, does not name, or names alone)."""
    layers: dict[str, int] = dict(graph.LAYERS)
    layers.pop("(root)", None)  # the package root: only the version, no folder to draw
    rows: list[Row] = []
    problems: list[str] = []
    lines = (graph.__doc__ or "").split("Layers, lowest first", 1)[-1].splitlines()[1:]
    layer = None
    for line in lines:
        match = _ROW.match(line)
        if match is None:
            if rows:
                break  # the table ends at its first line of another shape
            continue
        if match.group(1) is not None:
            layer = int(match.group(1))
        if layer is None:
            continue
        folders = match.group(2).split()
        for name in folders:
            if name not in layers and name != "(root)":
                problems.append(f"{name} is in the table but not in LAYERS")
            elif layers.get(name, layer) != layer:
                problems.append(
                    f"{name} is in layer {layers[name]} in LAYERS but in layer {layer} in the table"
                )
        rows.append(Row(layer, [f for f in folders if layers.get(f) == layer], match.group(3)))
    named = {f for row in rows for f in row.folders}
    for name in sorted(set(layers) - named, key=lambda n: (layers[n], n)):  # drawn in their LAYERS layer
        if not any(f"{name} is in layer" in problem for problem in problems):
            problems.append(f"{name} (layer {layers[name]}) has no line in the docstring's layer table")
        rows.append(Row(layers[name], [name], ""))
    rows = [r for r in rows if r.folders]
    rows.sort(key=lambda r: -r.layer)  # stable: the table's order within a layer
    return rows, problems


def _path(a: Box, a_side: str, ax: float, b: Box, b_side: str, bx: float) -> str:
    ay = a.y + BOX_H if a_side == "bottom" else a.y
    by = b.y if b_side == "top" else b.y + BOX_H
    if a_side == "bottom" and b_side == "top":  # down
        d = max(18.0, (by - ay) / 2)
        c1, c2 = ay + d, by - d
    elif a_side == "bottom":  # along one row: an arc under it
        d = 16 + 0.06 * abs(bx - ax)
        c1 = c2 = ay + d
    else:  # up, within a layer: top of the importer to the bottom of the imported
        d = max(18.0, (ay - by) / 2)
        c1, c2 = ay - d, by + d
    return f"M{ax:.1f},{ay:.1f} C{ax:.1f},{c1:.1f} {bx:.1f},{c2:.1f} {bx:.1f},{by:.1f}"


def _row_width(row: Row) -> float:
    return sum(len(name) * MONO_CHAR + 2 * BOX_PAD for name in row.folders) + BOX_GAP * (len(row.folders) - 1)


def render_svg(graph: Any, result: dict[str, Any], rows: list[Row]) -> str:
    """The picture: a band per layer (highest on top), a row of folders per line of the layer
    table (centred) with its words on the right, a faint line per folder import (thicker for
    more module imports; a folder's own come out when it is hovered, with the folders it imports
    and the folders importing it marked), a dashed line where Airflow may start to be imported."""
    boxes: dict[str, Box] = {}
    bands: list[tuple[int, float, float]] = []
    column = max(_row_width(r) for r in rows)
    y = float(MARGIN)
    for layer in sorted({r.layer for r in rows}, reverse=True):
        top = y
        y += BAND_PAD
        for row in (r for r in rows if r.layer == layer):
            x = LEFT + (column - _row_width(row)) / 2
            for name in row.folders:
                w = len(name) * MONO_CHAR + 2 * BOX_PAD
                boxes[name] = Box(name, layer, x, y, w)
                x += w + BOX_GAP
            y += BOX_H + ROW_GAP
        y += BAND_PAD - ROW_GAP
        bands.append((layer, top, y))
        y += BAND_GAP
    height = y - BAND_GAP + MARGIN
    desc_x = LEFT + column + DESC_GAP
    width = desc_x + max(len(r.words) for r in rows) * TEXT_CHAR + MARGIN

    edges = [
        (a, b, n)
        for (a, b), n in sorted(result["folder_edges"].items())
        if a in boxes and b in boxes and a != b
    ]
    ends: list[tuple[str, str, str, str]] = []  # importer, its side, imported, its side
    for a, b, _ in edges:
        if boxes[a].y == boxes[b].y:
            sides = ("bottom", "bottom")
        elif boxes[a].y < boxes[b].y:
            sides = ("bottom", "top")
        else:
            sides = ("top", "bottom")
        ends.append((a, sides[0], b, sides[1]))
        boxes[a].attach.setdefault(sides[0], []).append((boxes[b].cx, f"{a}>{b}"))
        boxes[b].attach.setdefault(sides[1], []).append((boxes[a].cx, f"{a}>{b}"))
    spots: dict[tuple[str, str], float] = {}  # (box, edge) -> x where the edge meets the box
    for box in boxes.values():
        for attached in box.attach.values():
            attached.sort()
            inner = box.w * 0.8
            for i, (_, key) in enumerate(attached):
                spots[(box.name, key)] = box.x + box.w * 0.1 + inner * (i + 1) / (len(attached) + 1)

    imports: dict[str, list[str]] = {}  # folder -> the folders it imports
    imported_by: dict[str, list[str]] = {}
    for a, b, _ in edges:
        imports.setdefault(a, []).append(b)
        imported_by.setdefault(b, []).append(a)

    brand, muted = "var(--color-brand-primary, #2962ff)", "var(--color-foreground-muted, #646776)"
    out = [
        f'<svg class="kgl" xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {width:.0f} {height:.0f}" '
        f'style="width: 100%; max-width: {width:.0f}px; height: auto" role="img" '
        'aria-labelledby="kgl-title kgl-desc">',
        '<title id="kgl-title">The layers of airflow_provider_kgroups, from scripts/import_graph.py</title>',
        '<desc id="kgl-desc">'
        + escape("; ".join(f"layer {r.layer}: {' '.join(r.folders)} ({r.words})" for r in reversed(rows)))
        + "</desc>",
        "<style>",
        ".kgl .band { fill: var(--color-background-secondary, #f8f9fb);"
        " stroke: var(--color-background-border, #eeebee); }",
        f".kgl .box {{ fill: var(--color-background-primary, #fff); stroke: {muted}; }}",
        f".kgl .box.airflow {{ stroke: {brand}; }}",
        ".kgl text { fill: var(--color-foreground-primary, #000); }",
        ".kgl .name { font: 13px var(--font-stack--monospace, monospace); }",
        ".kgl .words, .kgl .note { font: 12px var(--font-stack, sans-serif);"
        " fill: var(--color-foreground-secondary, #5a5c63); }",
        f".kgl .layer {{ font: bold 16px var(--font-stack, sans-serif); fill: {muted}; }}",
        f".kgl .edge {{ fill: none; stroke: {muted}; stroke-opacity: 0.18; }}",
        f".kgl .airflow-line {{ stroke: {brand}; stroke-dasharray: 6 4; }}",
        f".kgl .note.airflow {{ fill: {brand}; }}",
        f".kgl #kgl-arrow path {{ fill: {brand}; }}",
        ".kgl .folder { cursor: default; }",
        ".kgl .folder:hover .box { stroke-width: 2.5; }",
    ]
    for name in boxes:  # hovering a folder: its imports' lines, what it imports, what imports it
        hovered = f'.kgl:has(.folder[data-name="{name}"]:hover)'
        out.append(
            f'{hovered} .edge[data-from="{name}"] {{ stroke: {brand}; stroke-opacity: 1; marker-end: url(#kgl-arrow); }}'
        )
        targets = [f'{hovered} .folder[data-name="{b}"] .box' for b in imports.get(name, [])]
        if targets:
            out.append(", ".join(targets) + f" {{ fill: {brand}; fill-opacity: 0.18; stroke: {brand}; }}")
        sources = [f'{hovered} .folder[data-name="{a}"] .box' for a in imported_by.get(name, [])]
        if sources:
            out.append(", ".join(sources) + f" {{ stroke: {brand}; stroke-dasharray: 3 2; }}")
    out += [
        "</style>",
        "<defs>",
        '<marker id="kgl-arrow" viewBox="0 0 8 8" refX="8" refY="4" markerWidth="8" markerHeight="8"'
        ' markerUnits="userSpaceOnUse" orient="auto"><path d="M0,0 L8,4 L0,8 z"/></marker>',
        "</defs>",
    ]
    for layer, top, bottom in bands:
        out.append(
            f'<rect class="band" x="{MARGIN / 2:.1f}" y="{top:.1f}" width="{width - MARGIN:.1f}" '
            f'height="{bottom - top:.1f}" rx="6"/>'
        )
        out.append(
            f'<text class="layer" x="{MARGIN / 2 + 15:.1f}" y="{(top + bottom) / 2 + 6:.1f}">{layer}</text>'
        )
    airflow = graph.AIRFLOW_LAYER
    above = [b for b in bands if b[0] == airflow]
    below = [b for b in bands if b[0] == airflow - 1]
    if above and below:
        line_y = (above[0][2] + below[0][1]) / 2
        out.append(
            f'<line class="airflow-line" x1="{MARGIN / 2:.1f}" y1="{line_y:.1f}" x2="{width - MARGIN / 2:.1f}" '
            f'y2="{line_y:.1f}"/>'
        )
        out.append(
            f'<text class="note airflow" x="{desc_x:.1f}" y="{line_y - 5:.1f}">'
            f"airflow is imported from layer {airflow} up only</text>"
        )
    for a, a_side, b, b_side in ends:
        key = f"{a}>{b}"
        n = result["folder_edges"][(a, b)]
        d = _path(boxes[a], a_side, spots[(a, key)], boxes[b], b_side, spots[(b, key)])
        out.append(
            f'<path class="edge" data-from="{escape(a)}" d="{d}" stroke-width="{0.8 + 0.45 * math.log2(n):.2f}"/>'
        )
    for row in rows:
        first = boxes[row.folders[0]]
        if row.words:
            out.append(
                f'<text class="words" x="{desc_x:.1f}" y="{first.y + BOX_H / 2 + 4:.1f}">{escape(row.words)}</text>'
            )
    for box in boxes.values():
        counted = [f"{b} ({result['folder_edges'][(box.name, b)]})" for b in imports.get(box.name, [])]
        tip = f"{box.name} (layer {box.layer}) imports {', '.join(counted) or 'no other folder'}"
        tip += f" (module imports in brackets); imported by {', '.join(imported_by.get(box.name, [])) or 'no other folder'}"
        cls = "box airflow" if box.layer >= airflow else "box"
        out += [
            f'<g class="folder" data-name="{escape(box.name)}"><title>{escape(tip)}</title>',
            f'<rect class="{cls}" x="{box.x:.1f}" y="{box.y:.1f}" width="{box.w:.1f}" height="{BOX_H}" rx="4"/>',
            f'<text class="name" x="{box.cx:.1f}" y="{box.y + BOX_H / 2 + 4.5:.1f}" text-anchor="middle">'
            f"{escape(box.name)}</text></g>",
        ]
    out.append("</svg>")
    return "\n".join(out)


def render_imports(result: dict[str, Any], rows: list[Row]) -> str:
    """What each folder imports, as a list under the picture (for readers who cannot hover)."""
    items = []
    for row in rows:
        for name in row.folders:
            targets = [f"{b} ({n})" for (a, b), n in sorted(result["folder_edges"].items()) if a == name]
            items.append(
                f"<li><code>{escape(name)}</code> (layer {row.layer}): {escape(', '.join(targets) or 'nothing')}</li>"
            )
    return (
        '<details class="kgroups-layers-imports"><summary>What each folder imports (module imports in '
        "brackets)</summary><ul>" + "".join(items) + "</ul></details>"
    )


def render_text(rows: list[Row]) -> str:
    """The same layers as text, for builders other than HTML."""
    return "\n".join(f"{r.layer}  {' '.join(r.folders):<45} {r.words}" for r in rows)


class LayersDirective(SphinxDirective):
    """The layers of ``scripts/import_graph.py``, drawn (HTML) or as a table (other builders)."""

    def run(self) -> list[nodes.Node]:
        self.env.note_dependency(str(SCRIPT))
        graph = load_import_graph()
        rows, problems = table_rows(graph)
        for problem in problems:
            logger.warning(
                "scripts/import_graph.py: %s: keep LAYERS and the docstring's table together",
                problem,
                location=self.get_location(),
            )
        result = graph.analyse()
        figure = nodes.container(classes=["kgroups-layers"])
        figure += nodes.raw("", render_svg(graph, result, rows), format="html")
        figure += nodes.raw("", render_imports(result, rows), format="html")
        other = addnodes.only(expr="not html")
        other += nodes.literal_block(render_text(rows), render_text(rows))
        return [figure, other]


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_directive("kgroups-layers", LayersDirective)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
