"""How numbers read in zq stats' tables and charts: one format per column, and plurals."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

# A column whose every number lies in [-1, 1] (rates, shares) shows 4
# decimals; any other column of floats 2.
FRACTION_DECIMALS = 4
DECIMALS = 2


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def column_format(values: Sequence[Any], *, separators: bool = False) -> Callable[[Any], str]:
    """The format of one column's numbers, chosen from all of them.

    The decimals are the column's, not each value's: ``1.00`` beside
    ``0.5000`` in one column reads as two different units. A column of
    whole numbers stays whole; one float makes every number of the column
    a float. ``separators``: thousands separated (``1,787.25``). Anything
    not a number is returned as ``str`` (None as empty).
    """
    floats = [v for v in values if isinstance(v, float) and math.isfinite(v)]
    whole = not any(isinstance(v, float) for v in values)
    places = (FRACTION_DECIMALS if all(-1 <= v <= 1 for v in floats) else DECIMALS)
    comma = "," if separators else ""

    def show(value: Any) -> str:
        if value is None:
            return ""
        if not _is_number(value):
            return str(value)
        if isinstance(value, float) and math.isnan(value):
            return "nan"
        if whole:
            return f"{value:{comma}d}"
        return f"{value:{comma}.{places}f}"

    return show


def plural(count: float, noun: str) -> str:
    """``noun`` for a count of one, ``noun + "s"`` for any other: 1 message, 2 messages."""
    return noun if count == 1 else f"{noun}s"
