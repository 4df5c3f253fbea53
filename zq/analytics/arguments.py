"""The options of ``zq stats``, shared by the CLI (zq.analytics.cli) and the
Spark job run directly (``spark-submit zq/analytics/job.py``).

Its own module so that the job and the CLI both import it and neither
imports the other.
"""

from __future__ import annotations

import argparse
import re
from datetime import UTC, datetime

from zq.analytics.buckets import parse_bucket

DEFAULT_TOP = 20
_SIGNATURE_ID = re.compile(r"^[0-9a-f]{12}$")


def parse_time(text: str) -> float:
    """``2026-11-22``, ``2026-11-22T15:00[:00][Z|+01:00]`` or POSIX seconds -> seconds."""
    try:
        return float(text)
    except ValueError:
        pass
    try:
        moment = datetime.fromisoformat(text.replace("Z", "+00:00"))
    except ValueError as exc:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a date (2026-11-22), a UTC time (2026-11-22T15:00:00Z) "
            "or POSIX seconds"
        ) from exc
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.timestamp()


def _spark_conf(text: str) -> tuple[str, str]:
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"expected KEY=VALUE, got {text!r}")
    return key, value


def positive(text: str) -> int:
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {text}")
    return value


def seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected seconds, got {text!r}") from None
    if not value >= 0:
        raise argparse.ArgumentTypeError(f"must not be negative, got {text}")
    return value


def positive_seconds(text: str) -> float:
    value = seconds(text)
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be more than 0, got {text}")
    return value


def share(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value < 1:
        raise argparse.ArgumentTypeError(f"must be a fraction from 0 to below 1, got {text}")
    return value


def signature_id(text: str) -> str:
    """``--signature``: the 12 hex digits of a poison signature's ``signature_id``."""
    value = text.strip().lower()
    if not _SIGNATURE_ID.match(value):
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a signature id (12 hex digits, the signature_id column of "
            "poison_signatures)")
    return value


# The most events ``--engine auto`` counts without Spark: about a second of
# plain Python on a small machine, where starting Spark takes 10-60 s.
PLAIN_MAX_EVENTS = 100_000


def add_stats_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``zq stats`` (shared with ``spark-submit zq/analytics/job.py``)."""
    parser.add_argument("action", nargs="?", choices=("advise", "signatures"),
                        help="advise: recommend _max_claim_count and a backoff per queue "
                             "from the observed attempts (see --tolerance, --min-failing); "
                             "signatures: every message id of every poison signature, or of "
                             "those given with --signature (the drill-down)")
    parser.add_argument("--events", required=True, metavar="DIR",
                        help="the exported dataset (local path, hdfs://, s3a://)")
    parser.add_argument("--queue", help="only this queue")
    parser.add_argument("--project", help="only this project")
    parser.add_argument("--since", type=parse_time, metavar="T",
                        help="only events at or after T (date, ISO time or POSIX seconds; UTC)")
    parser.add_argument("--until", type=parse_time, metavar="T",
                        help="only events before T")
    parser.add_argument("--format", choices=("table", "json", "csv"), default="table",
                        help="how to print the tables (default: table)")
    parser.add_argument("--out", metavar="DIR",
                        help="also write every table (CSV, Parquet), PNG charts and report.html")
    parser.add_argument("--master", metavar="URL",
                        help="Spark master (default: local[*], or what spark-submit set)")
    parser.add_argument("--sql", metavar="QUERY",
                        help="run this query over the views events, lifecycles, claims and "
                             "every table, and print its result instead")
    parser.add_argument("--top", type=positive, default=DEFAULT_TOP,
                        help=f"rows kept in the top-N tables (default {DEFAULT_TOP})")
    parser.add_argument("--tolerance", type=share, metavar="SHARE",
                        help="advise: the share of succeeded messages a recommendation may "
                             "dead letter (default 0.01)")
    parser.add_argument("--min-failing", type=positive, metavar="N",
                        help="advise: failing messages a queue needs before it gets a "
                             "recommendation (default 20)")
    parser.add_argument("--bucket", type=parse_bucket, metavar="WIDTH",
                        help="the trend tables' time bucket: auto (default: 1 minute when "
                             "the events span under 2 hours, 1 hour under 3 days, else 1 "
                             "day), minute, hour, day, or e.g. 5m, 6h, 7d")
    parser.add_argument("--signature", dest="signatures", type=signature_id,
                        action="append", metavar="ID",
                        help="signatures: only this signature_id (repeatable)")
    parser.add_argument("--conf", type=_spark_conf, action="append", default=[],
                        metavar="KEY=VALUE", help="extra Spark setting (repeatable)")
    parser.add_argument("--engine", choices=("auto", "spark", "python"), default="auto",
                        help="auto (default): plain Python when the selection holds at most "
                             f"{PLAIN_MAX_EVENTS:,} events and neither --sql, --master nor "
                             "advise asks for Spark, else Spark")
    parser.add_argument("--verbose", action="store_true",
                        help="show Spark's own output (log4j warnings, JVM messages) on "
                             "stderr; by default it goes to a log file named in the progress")


def stats_arguments_problem(args: argparse.Namespace) -> str | None:
    """Options that cannot take effect together, as a one-line message."""
    if args.action != "advise":
        given = [flag for flag, value in (("--tolerance", args.tolerance),
                                          ("--min-failing", args.min_failing))
                 if value is not None]
        if given:
            return f"{' and '.join(given)} only apply to 'zq stats advise'"
    if args.action is not None and args.sql:
        return (f"--sql does not apply to 'zq stats {args.action}' (the views are in plain "
                "'zq stats')")
    if args.action is not None and getattr(args, "bucket", None) is not None:
        return "--bucket applies to the trend tables of plain 'zq stats'"
    if args.action != "signatures" and getattr(args, "signatures", None):
        return "--signature only applies to 'zq stats signatures'"
    if getattr(args, "engine", "auto") == "python":
        needs_spark = [flag for flag, value in (("--sql", args.sql), ("--master", args.master),
                                                 ("advise", args.action == "advise"))
                       if value]
        if needs_spark:
            return f"--engine python cannot run {' or '.join(needs_spark)}: they need Spark"
    return None
