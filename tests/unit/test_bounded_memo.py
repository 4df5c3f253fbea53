"""zq.bounded_memo: a value is parsed once while kept, and never more than ``size`` are kept."""

from __future__ import annotations

import pytest

from zq.bounded_memo import BoundedMemo


class Parser:
    """Upper-cases its value, counting the calls; refuses "bad"."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def __call__(self, value: str) -> str:
        self.calls.append(value)
        if value == "bad":
            raise ValueError(value)
        return value.upper()


def parsed(memo: BoundedMemo[str, str], value: str) -> str:
    """How the request path reads a memo."""
    known = memo.kept.get(value)
    if known is None:
        known = memo.remember(value)
    return known


def test_a_value_is_parsed_once_while_kept() -> None:
    parse = Parser()
    memo = BoundedMemo(parse, 8)
    assert [parsed(memo, v) for v in ("a", "b", "a", "a")] == ["A", "B", "A", "A"]
    assert parse.calls == ["a", "b"]
    assert memo.kept == {"a": "A", "b": "B"} and len(memo) == 2


def test_a_refused_value_is_never_kept() -> None:
    parse = Parser()
    memo = BoundedMemo(parse, 8)
    for _ in range(3):
        with pytest.raises(ValueError):
            parsed(memo, "bad")
    assert parse.calls == ["bad"] * 3
    assert memo.kept == {}


def test_never_more_than_size_are_kept_and_the_values_in_use_come_back() -> None:
    parse = Parser()
    memo = BoundedMemo(parse, 16)
    kept = memo.kept
    for n in range(1000):
        assert parsed(memo, f"v{n}") == f"V{n}"
        assert parsed(memo, "steady") == "STEADY"  # a client's value, between hostile ones
        assert len(memo) <= 16
    assert memo.kept is kept  # emptied in place: a caller may hold on to it
    # A value in use is parsed again after an emptying (one per 15 new
    # values here), not on every request.
    assert parse.calls.count("steady") <= 1000 // 15 + 1
