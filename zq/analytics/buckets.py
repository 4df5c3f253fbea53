"""The time buckets of the trend tables (``queue_trend``, ``dead_letter_rate``).

A trend over an hour of events drawn in day buckets is one point; over a
year in minute buckets it is half a million. ``--bucket auto`` (the
default) picks the width from the selected events' own time range (last
event time minus first):

- under 2 hours: 1 minute (at most 120 buckets);
- under 3 days: 1 hour (at most 72);
- otherwise: 1 day.

``--bucket`` names a width instead: ``minute``, ``hour``, ``day`` or a
count and a unit, ``5m``, ``6h``, ``7d``. A width under a day must divide
a day, so that buckets line up with UTC hours and days. Buckets start at
multiples of their width since 1970-01-01T00:00:00Z (UTC); a bucket is
labelled by its start, ``YYYY-MM-DDTHH:MM:SSZ``, in every engine.

Pure Python (no pyspark): the CLI parses ``--bucket`` with it, and both
engines choose the width with it.
"""

from __future__ import annotations

import argparse
import math
import re
from datetime import UTC, datetime

MINUTE, HOUR, DAY = 60, 3600, 86400
# (range below, width): the first row whose range the events stay under.
AUTO_RULE = ((2 * HOUR, MINUTE), (3 * DAY, HOUR))
AUTO_LONG = DAY
_UNITS = {"m": MINUTE, "h": HOUR, "d": DAY}
_NAMES = {"minute": MINUTE, "hour": HOUR, "day": DAY}
_FORMAT = "%Y-%m-%dT%H:%M:%SZ"
_WIDTH = re.compile(r"^([1-9][0-9]{0,3})([mhd])$")


def parse_bucket(text: str) -> int | None:
    """``--bucket``: None for ``auto``, else the width in seconds (argparse type)."""
    value = text.strip().lower()
    if value == "auto":
        return None
    if value in _NAMES:
        return _NAMES[value]
    match = _WIDTH.match(value)
    if match is None:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a bucket: auto, minute, hour, day, or a count and a unit "
            "(5m, 6h, 7d)")
    width = int(match.group(1)) * _UNITS[match.group(2)]
    if width < DAY and DAY % width:
        raise argparse.ArgumentTypeError(
            f"{text!r} does not divide a day evenly, as a bucket under a day must "
            "(1m, 5m, 15m, 30m, 1h, 2h, 6h, 12h, ...)")
    if width > DAY and width % DAY:
        raise argparse.ArgumentTypeError(f"{text!r}: buckets over a day are whole days (2d, 7d)")
    return width


def choose(first: float | None, last: float | None, requested: int | None = None) -> int:
    """The bucket width in seconds: ``requested``, or AUTO_RULE on the range first..last."""
    if requested is not None:
        return requested
    span = 0.0 if first is None or last is None else last - first
    for below, width in AUTO_RULE:
        if span < below:
            return width
    return AUTO_LONG


def start(t: float, width: int) -> int:
    """The start of the bucket holding POSIX seconds ``t`` (floor(t / width) * width)."""
    # floor of the IEEE quotient, as Spark's floor(time / width) computes it
    # (t // width can differ from it by one at a boundary).
    return math.floor(t / width) * width


def label(bucket_start: int) -> str:
    """A bucket's label: its start, ISO 8601 UTC to the second."""
    return datetime.fromtimestamp(bucket_start, UTC).strftime(_FORMAT)


def shifted(bucket_label: str, seconds: int) -> str:
    """The label ``seconds`` after ``bucket_label`` (the end of a bucket of that width)."""
    moment = datetime.strptime(bucket_label, _FORMAT).replace(tzinfo=UTC)
    return label(int(moment.timestamp()) + seconds)


def describe(width: int) -> str:
    """A width in words: 1 minute, 15 minutes, 1 hour, 6 hours, 1 day, 7 days."""
    for unit, seconds in (("day", DAY), ("hour", HOUR), ("minute", MINUTE)):
        if width % seconds == 0:
            count = width // seconds
            return f"{count} {unit}" + ("s" if count != 1 else "")
    return f"{width} seconds"


def auto_reason(first: float | None, last: float | None) -> str:
    """Why auto chose its width, for the report's headline."""
    span = 0.0 if first is None or last is None else last - first
    for below, _ in AUTO_RULE:
        if span < below:
            return f"auto: the events span under {describe(below)}"
    return f"auto: the events span {describe(AUTO_RULE[-1][0])} or more"
