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
