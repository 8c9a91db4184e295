import pytest

from airflow_provider_kgroups.client import ConfigurationError, GroupSelector
from airflow_provider_kgroups.client.selection import validate_group_ids


def test_globs_regexes_and_excludes_select_exactly():
    selector = GroupSelector(ids=("pinned",), patterns=("orders-*", "re:billing-[0-9]+"), exclude=("*-test",))
    listed = ["orders-eu", "orders-test", "billing-12", "billing-x", "other"]
    assert selector.select(listed) == ["pinned", "billing-12", "orders-eu"]


def test_exact_ids_are_never_excluded():
    assert GroupSelector(ids=("a-test",), exclude=("*-test",)).select([]) == ["a-test"]


@pytest.mark.parametrize(
    "kwargs, fragment",
    [
        ({}, "no groups selected"),
        ({"patterns": ("",)}, "pattern '' is empty"),
        ({"patterns": ("re:(",)}, "not a valid regular expression"),
        ({"patterns": ("orders-[",)}, "unclosed '\\['"),
        ({"ids": "orders"}, "must be lists"),
        ({"ids": ("ok", "")}, "non-empty string"),
    ],
)
def test_bad_selection_is_named(kwargs, fragment):
    with pytest.raises(ConfigurationError, match=fragment):
        GroupSelector(**kwargs)


def test_group_id_lists():
    assert validate_group_ids(["a", "b", "a"]) == ["a", "b"]
    with pytest.raises(ConfigurationError, match="is empty"):
        validate_group_ids([])
    with pytest.raises(ConfigurationError, match="not the single string"):
        validate_group_ids("abc")


def test_bracket_escapes_and_literal_brackets_in_classes_are_accepted():
    assert GroupSelector(patterns=("a[[]b",)).select(["a[b", "ab"]) == ["a[b"]
    assert GroupSelector(patterns=("x[]]",)).select(["x]", "x"]) == ["x]"]
    assert GroupSelector(patterns=("v[!]]",)).select(["v]", "va"]) == ["va"]


def test_select_keeps_exactly_what_matches_says_in_listing_order():
    """select() runs each pattern over every name at once (100,000 listed groups); for any mix of
    ids, globs, regexes and excludes it keeps what matches() keeps, exact ids first."""
    import random

    rng = random.Random(31)
    names = ["".join(rng.choice("ab-1") for _ in range(rng.randrange(0, 6))) for _ in range(400)] + [
        "a",
        "b-1",
        "",
    ]
    selectors = [
        GroupSelector(patterns=("a*",)),
        GroupSelector(patterns=("a*", "re:b.*1"), exclude=("*-*",)),
        GroupSelector(ids=("zz", "a-b"), patterns=("*1",), exclude=("a*", "re:.*b.*")),
        GroupSelector(ids=("b",), patterns=("[ab]?",), exclude=("b",)),
    ]
    for selector in selectors:
        expected = list(
            dict.fromkeys([*selector.ids, *(g for g in sorted(names) if g and selector.matches(g))])
        )
        assert selector.select(names) == expected
