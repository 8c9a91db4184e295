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
