"""A collected table: what the Spark job hands to the report and the charts."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Result:
    """One collected table."""

    name: str
    columns: list[str]
    rows: list[tuple[Any, ...]]

    def records(self) -> list[dict[str, Any]]:
        return [dict(zip(self.columns, row, strict=True)) for row in self.rows]

    def column(self, name: str) -> list[Any]:
        index = self.columns.index(name)
        return [row[index] for row in self.rows]


def collect(name: str, frame: Any) -> Result:
    """Collect a (small) Spark DataFrame into a Result."""
    return Result(name, list(frame.columns), [tuple(row) for row in frame.collect()])
