"""TableStream: the lag table written part by part (many groups), aligned as render_table aligns."""

from __future__ import annotations

from airflow_provider_kgroups.cli.output import TableStream, render_table

HEADERS = ("GROUP", "TOPIC", "LAG", "NOTE")


def written(parts) -> str:
    out: list[bytes] = []
    table = TableStream(HEADERS, out.append)
    for rows in parts:
        table.add(rows)
    table.close()
    return b"".join(out).decode()


def test_one_part_is_the_whole_table():
    rows = [("g-1", "orders", 5, ""), ("g-22", "audit", None, "no_commit"), ("g-1", "TOTAL", 5, "Empty")]
    assert written([rows]) == render_table(HEADERS, rows) + "\n"


def test_later_parts_keep_the_columns_and_widen_only_where_they_must():
    first = [("g-1", "orders", 5, "")]
    narrow = [("g", "t", 1, "")]
    wide = [("group-with-a-long-id", "t", 1234567, "x")]
    assert written([first, narrow, [], wide]).splitlines() == [
        "GROUP  TOPIC   LAG  NOTE",  # the header once, aligned over the first part
        "g-1    orders  5        ",
        "g      t       1        ",  # a narrower part keeps the first part's widths
        "group-with-a-long-id  t       1234567  x   ",  # widened where the part needed it
    ]


def test_no_rows_at_all_leaves_the_header():
    assert written([[], []]) == "GROUP  TOPIC  LAG  NOTE\n"


def reference_table(headers, rows) -> str:
    """The table cell by cell, as simply as it can be said: what render_table's column-wise C
    loops must print."""
    headers = list(headers)[: min(map(len, rows))] if rows else list(headers)
    cells = [["-" if v is None else str(v) for v in row[: len(headers)]] for row in rows]
    widths = [max([len(h), *(len(r[i]) for r in cells)]) for i, h in enumerate(headers)]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(line, widths)) for line in [headers, *cells])


def test_render_table_prints_what_the_cell_by_cell_reference_prints():
    import random

    from airflow_provider_kgroups.cli.output import TABLE_BLOCK

    rng = random.Random(31)
    words = ["", "a", "grüppe", "x" * 40, "orders-ü-ñ", "TOTAL"]
    values = [None, 0, 7, 10**12, -3, 2.5, True, *words]
    for size in (0, 1, 5, TABLE_BLOCK + 3):
        rows = [tuple(rng.choice(values) for _ in range(5)) for _ in range(size)]
        assert render_table(HEADERS + ("EXTRA",), rows) == reference_table(HEADERS + ("EXTRA",), rows)
    ragged = [("g", "t", 1, "x", "longest"), ("g2", "t", None, "y")]  # the shortest row decides
    assert render_table(HEADERS + ("EXTRA",), ragged) == reference_table(HEADERS + ("EXTRA",), ragged)


def test_values_equal_yet_written_otherwise_are_each_measured():
    """1, True and 1.0 are equal (one in a set) but "1", "True", "1.0"; an int column is as wide
    as its longest number, negative ones included."""
    for column in (
        [1, True, 1.0],
        [1.0, True, 1],
        [True, 1],
        [0, False, ""],
        [-12345, 7, "", None],
        [5, "-"],
    ):
        rows = [("g", v) for v in column]
        assert render_table(("A", "B"), rows) == reference_table(("A", "B"), rows)


def test_the_rows_pass_finds_whether_every_total_is_known_as_lag_ok_does():
    """``kgroups lag`` streams: each part's totals are found while its rows (or jsonl documents)
    are made, not computed again for the exit code; the answer is lag_ok's own, part by part."""
    import argparse

    from airflow_provider_kgroups.cli.lag import _jsonl_writer
    from airflow_provider_kgroups.cli.lag_rows import lag_ok, lag_rows, lag_rows_and_totals
    from airflow_provider_kgroups.client.errors import Failure
    from airflow_provider_kgroups.lag.model import LagSnapshot
    from tests.support.builders import group, partition, snapshot

    known = group("known", partition("t", 0, 5, 10), partition("t", 1, 7, 7))
    unknown = group("unknown", partition("t", 0, None, 10))  # no commit under FAIL: total unknown
    dead = group("gone", state="Dead", members=0)  # not found: no total
    parts = [
        snapshot(1, known),
        snapshot(1, known, unknown),
        snapshot(1, dead),
        snapshot(1),
        LagSnapshot(1, {"known": known}, failures={"lost": Failure(15)}),
    ]
    args = argparse.Namespace(pretty=False, seconds=False)
    for part in parts:
        rows, totals_known = lag_rows_and_totals(part, None)
        assert rows == lag_rows(part, None)
        assert totals_known == all(g.total_lag is not None for g in part.groups.values())
        assert lag_ok(part, None, totals_known) == lag_ok(part, None)
        assert _jsonl_writer(args)(part, None) == totals_known
    assert [lag_rows_and_totals(p, None)[1] for p in parts] == [True, False, False, True, True]
    assert [lag_ok(p, None) for p in parts] == [True, False, False, True, False]
