"""Before Spark starts: does the dataset exist, and do any of its events match?

Starting Spark costs tens of seconds. An answer that needs no Spark (the
path is wrong, the dataset is empty, the filters match nothing) comes from
pyarrow alone: the day partitions are listed (and pruned by
``since``/``until``), and the project, queue and time filters are applied
to those columns of the selected files.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urlsplit

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as ds
import pyarrow.fs as pafs

from zq.analytics.schema import PARTITION_KEY, SCHEMA, event_date

_DAY = re.compile(rf"^{PARTITION_KEY}=(\d{{4}}-\d{{2}}-\d{{2}})$")


@dataclass(frozen=True)
class EventFilter:
    """Which events to analyse; None means no restriction."""

    project: str | None = None
    queue: str | None = None
    since: float | None = None  # POSIX seconds, inclusive
    until: float | None = None  # POSIX seconds, exclusive

    def describe(self) -> str:
        """The restrictions in force, for messages ("" when none)."""
        from zq.poison.history import iso8601

        parts = [f"{name} {value!r}" for name, value in
                 (("project", self.project), ("queue", self.queue)) if value is not None]
        parts += [f"{name} {iso8601(value)}" for name, value in
                  (("since", self.since), ("until", self.until)) if value is not None]
        return ", ".join(parts)


class DatasetMissing(Exception):
    """The dataset path does not exist or is not a directory."""


@dataclass(frozen=True)
class Selection:
    """What pyarrow found: parquet files in the selected days, matching events."""

    files: int
    events: int


def select(path: str, where: EventFilter) -> Selection | None:
    """Count the events of the dataset at ``path`` that ``where`` selects.

    None when pyarrow cannot open the filesystem (e.g. ``hdfs://`` without
    libhdfs on this machine): Spark, which may well reach it, decides then.
    Raises DatasetMissing when the path is absent or not a directory.
    """
    opened = _open(path)
    if opened is None:
        return None
    filesystem, root = opened
    info = filesystem.get_file_info(root)
    if info.type == pafs.FileType.NotFound:
        raise DatasetMissing("it does not exist")
    if info.type != pafs.FileType.Directory:
        raise DatasetMissing("it is not a directory (an exported dataset is one)")
    files = _files(filesystem, root, where)
    if not files:
        return Selection(0, 0)
    dataset = ds.dataset(files, schema=SCHEMA, format="parquet", filesystem=filesystem)
    return Selection(len(files), dataset.count_rows(filter=_expression(where)))


def read(path: str, where: EventFilter) -> pa.Table:
    """The selected events as one Arrow table (for the plain-Python engine: small selections)."""
    opened = _open(path)
    if opened is None:
        raise DatasetMissing("this filesystem cannot be read without Spark")
    filesystem, root = opened
    files = _files(filesystem, root, where)
    if not files:
        return SCHEMA.empty_table()
    dataset = ds.dataset(files, schema=SCHEMA, format="parquet", filesystem=filesystem)
    return dataset.to_table(filter=_expression(where))


def _files(filesystem: pafs.FileSystem, root: str, where: EventFilter) -> list[str]:
    return [entry.path for day in _days(filesystem, root, where)
            for entry in filesystem.get_file_info(pafs.FileSelector(day, recursive=True))
            if entry.type == pafs.FileType.File and entry.path.endswith(".parquet")]


def _open(path: str) -> tuple[pafs.FileSystem, str] | None:
    scheme = urlsplit(path).scheme.lower()
    if scheme in ("", "file"):
        return pafs.LocalFileSystem(), urlsplit(path).path if scheme else path
    # Spark spells S3 "s3a"; pyarrow knows it as "s3".
    arrow_uri = "s3" + path[len(scheme):] if scheme in ("s3a", "s3n") else path
    try:
        return pafs.FileSystem.from_uri(arrow_uri)
    except Exception:  # pyarrow raises ArrowInvalid / OSError by scheme
        return None


def _days(filesystem: pafs.FileSystem, root: str, where: EventFilter) -> list[str]:
    """The day partition directories ``since``/``until`` leave in."""
    first = event_date(where.since) if where.since is not None else None
    last = event_date(where.until) if where.until is not None else None
    days = []
    for entry in filesystem.get_file_info(pafs.FileSelector(root)):
        match = _DAY.match(entry.base_name)
        if entry.type != pafs.FileType.Directory or match is None:
            continue
        day = match.group(1)
        if (first is None or day >= first) and (last is None or day <= last):
            days.append(entry.path)
    return days


def _expression(where: EventFilter) -> pc.Expression:
    expression = pc.scalar(True)
    if where.project is not None:
        expression &= pc.field("project") == where.project
    if where.queue is not None:
        expression &= pc.field("queue") == where.queue
    if where.since is not None:
        expression &= pc.field("time") >= where.since
    if where.until is not None:
        expression &= pc.field("time") < where.until
    return expression
