"""No number check is written by hand outside ``client/numbers.py``: ``True`` is an ``int`` and
NaN passes ``x <= 0``, so the package tells ints from bools and numbers from NaN in one place.
Checked with ``ast`` (nothing is imported or run), like ``test_import_graph.py``.

A hand-written number check is any of:

* ``isinstance(x, int)`` / ``isinstance(x, float)`` (alone, in a tuple, or ``numbers.Integral``
  and friends);
* ``type(x) is int`` / ``type(x) in (int, float)``;
* ``isinstance(x, bool)`` in a function that also calls ``int(x)`` or ``float(x)`` (a bool
  refused before a conversion: ``numbers.to_number``).

``isinstance(x, bool)`` alone is a flag check (``dry_run``), not a number check.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1] / "airflow_provider_kgroups"
VALIDATORS = "client/numbers.py"
#: path -> the calls that stay, each with the reason.
ALLOWED = {
    # A filter over the module's own constants (no input): numbers.py imports errors.py (its
    # ConfigurationError), so errors.py cannot import numbers.py.
    "client/errors.py": {"isinstance(code, int)"},
}
NUMBER_TYPES = {"int", "float", "Integral", "Real", "Number", "Rational", "Complex"}


def _type_names(node: ast.expr) -> set[str]:
    if isinstance(node, ast.Name):
        return {node.id}
    if isinstance(node, ast.Attribute):
        return {node.attr}
    if isinstance(node, ast.Tuple):
        return set().union(*(_type_names(e) for e in node.elts))
    return set()


def _is_call(node: ast.AST, name: str) -> bool:
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == name


def hand_written_checks(source: str) -> list[tuple[int, str]]:
    """``(line, source)`` of every hand-written number check in a module's source."""
    tree = ast.parse(source)
    scopes = [n for n in ast.walk(tree) if isinstance(n, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda))]
    converted: dict[ast.AST, set[str]] = {}  # function -> dumps of what it passes to int() / float()
    for scope in [tree, *scopes]:
        converted[scope] = {
            ast.dump(c.args[0])
            for c in ast.walk(scope)
            if (_is_call(c, "int") or _is_call(c, "float")) and c.args
        }
    innermost = {}
    for scope in [tree, *scopes]:  # walk order: an inner function comes after its outer one
        for node in ast.walk(scope):
            innermost[node] = scope
    found = []
    for node in ast.walk(tree):
        if _is_call(node, "isinstance") and len(node.args) == 2:
            types = _type_names(node.args[1])
            if types & NUMBER_TYPES or (
                types == {"bool"} and ast.dump(node.args[0]) in converted[innermost[node]]
            ):
                found.append((node.lineno, node.col_offset, ast.get_source_segment(source, node)))
        elif (
            isinstance(node, ast.Compare)
            and _is_call(node.left, "type")
            and any(_type_names(c) & NUMBER_TYPES for c in node.comparators)
        ):
            found.append((node.lineno, node.col_offset, ast.get_source_segment(source, node)))
    return [(line, text) for line, _, text in sorted(found)]


def package_checks(root: Path = ROOT) -> dict[str, list[tuple[int, str]]]:
    out = {}
    for path in sorted(root.rglob("*.py")):
        where = path.relative_to(root).as_posix()
        if where == VALIDATORS:
            continue
        checks = [
            (line, text)
            for line, text in hand_written_checks(path.read_text())
            if text not in ALLOWED.get(where, set())
        ]
        if checks:
            out[where] = checks
    return out


def test_no_number_check_is_written_by_hand_outside_the_validators_module():
    scanned = list(ROOT.rglob("*.py"))
    assert len(scanned) > 100 and (ROOT / VALIDATORS).exists()  # the scan did read the package
    assert package_checks() == {}, (
        "use is_int / is_number / check_int / check_number / to_number (client/numbers.py)"
    )
    assert hand_written_checks((ROOT / VALIDATORS).read_text())  # the one place that has them


def test_the_allowed_exceptions_are_still_there():
    """An allowed call that is gone is a stale entry: remove it."""
    for where, texts in ALLOWED.items():
        assert texts <= {text for _, text in hand_written_checks((ROOT / where).read_text())}, where


def test_the_check_sees_each_form():
    """The check can fail: each form of a hand-written number check is found, and the calls
    of the validators and a flag check are not."""
    source = """
def a(x):
    if isinstance(x, bool) or not isinstance(x, int) or x < 0:
        raise ValueError(x)

def b(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool)

def c(x):
    if isinstance(x, bool):
        raise TypeError
    return float(x)

def d(x):
    return type(x) is int or type(x) in (float, str)

def e(x):
    import numbers
    return isinstance(x, numbers.Integral)

def fine(x, flag):
    if not isinstance(flag, bool):
        raise ValueError(flag)
    return is_int(x) and check_int("x", x, at_least=0) and int(str(x))
"""
    assert hand_written_checks(source) == [
        (3, "isinstance(x, int)"),
        (7, "isinstance(x, (int, float))"),
        (10, "isinstance(x, bool)"),
        (15, "type(x) is int"),
        (15, "type(x) in (float, str)"),
        (19, "isinstance(x, numbers.Integral)"),
    ]
