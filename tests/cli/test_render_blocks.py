"""render_table in blocks (cli.TABLE_BLOCK rows at a time): the same text as in one block,
whichever block holds a column's widest cell, and the old cell-by-cell layout."""

from __future__ import annotations

from airflow_provider_kgroups import cli


def cell_by_cell(headers, rows) -> str:
    """The layout spelled out: each column as wide as its widest cell or header, None as "-"."""
    cells = [[("-" if v is None else str(v)) for v in row] for row in rows]
    widths = [max([len(h)] + [len(r[i]) for r in cells]) for i, h in enumerate(headers)]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(row, widths)) for row in [list(headers), *cells])


def test_blocks_give_the_same_table_as_one_block(monkeypatch):
    headers = ("GROUP", "TOPIC", "PARTITION", "LAG", "NOTE")
    rows = [(f"g{i}", "orders" if i % 3 else None, i, None if i % 5 == 0 else i * 7, "") for i in range(25)]
    rows[22] = ("the-widest-group-id-is-in-the-last-block", "t", 22, 10**12, "lost")
    whole = cli.render_table(headers, rows)
    monkeypatch.setattr(cli, "TABLE_BLOCK", 4)
    assert cli.render_table(headers, rows) == whole == cell_by_cell(headers, rows)
    assert cli.render_table(headers, rows[:4]) == cell_by_cell(headers, rows[:4])  # exactly one block
    assert cli.render_table(headers, []) == "  ".join(headers)
