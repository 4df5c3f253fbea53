"""The Spark job behind ``zq stats``; also ``spark-submit zq/analytics/job.py --events DIR``.

Reads the exported events, reconstructs lifecycles, computes the tables of
``zq.analytics.tables``, registers everything as SQL views and prints the
tables (or the result of ``--sql``). The job uses only DataFrame operations,
no Python UDFs, so executors need nothing but Spark itself.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, TYPE_CHECKING

if __name__ == "__main__" and not __package__:
    # Run as a script (spark-submit zq/analytics/job.py): make this checkout's
    # zq importable, ahead of any installed copy.
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from zq.analytics.arguments import add_stats_arguments
from zq.analytics.spark import SparkMissing, spark_session
from zq.history import iso8601

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


class Progress:
    """Phase names, counts and timings on stderr, for the person waiting."""

    def __init__(self, stream: IO[str] | None = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.started = time.monotonic()

    def __call__(self, message: str) -> None:
        elapsed = time.monotonic() - self.started
        print(f"[zq stats {elapsed:6.1f}s] {message}", file=self.stream, flush=True)


def run(
    args: argparse.Namespace,
    *,
    spark: SparkSession | None = None,
    out: IO[str] | None = None,
    progress: Callable[[str], None] | None = None,
) -> int:
    """Run the job for parsed ``args``; prints to ``out`` (stdout). Returns the exit code."""
    out = out if out is not None else sys.stdout
    say = progress or Progress()
    try:
        return _run(args, spark, out, say)
    except SparkMissing as exc:
        print(f"zq: error: {exc}", file=sys.stderr)
        return 1


def _run(args: argparse.Namespace, spark: SparkSession | None, out: IO[str],
         say: Callable[[str], None]) -> int:
    if spark is None:
        say("starting Spark")
        spark = spark_session(args.master, conf=dict(args.conf))
        say(f"Spark {spark.version} on {spark.sparkContext.master}")
    from pyspark.errors import AnalysisException

    from zq.analytics import lifecycles as lc
    from zq.analytics import report, tables
    from zq.analytics.results import collect

    where = lc.EventFilter(project=args.project, queue=args.queue,
                           since=args.since, until=args.until)
    say(f"reading events from {args.events}")
    try:
        events = lc.read_events(spark, args.events, where).cache()
        total = events.count()
    except AnalysisException as exc:
        print(f"zq: error: cannot read events from {args.events}: {exc}", file=sys.stderr)
        return 1
    say(f"{total:,} events selected")
    say("reconstructing message lifecycles (window functions)")
    steps = lc.message_events(events).cache()
    holds = lc.claim_holds(steps)
    lifecycles = lc.lifecycles(steps)
    computed = tables.compute(events, steps, holds, top=args.top)
    views = {"events": events, "message_events": steps, "claims": holds,
             "lifecycles": lifecycles, **computed}
    for name, frame in views.items():
        frame.createOrReplaceTempView(name)

    if args.sql:
        say("running --sql")
        try:
            result = collect("sql", spark.sql(args.sql))
        except AnalysisException as exc:
            print(f"zq: error: {exc}", file=sys.stderr)
            return 2
        out.write(report.render([result], args.format))
        say(f"{len(result.rows)} rows")
        return 0

    results = {}
    for name, frame in computed.items():
        say(f"computing {name}")
        results[name] = collect(name, frame)
        say(f"  {name}: {len(results[name].rows)} rows")
    out.write(report.render(list(results.values()), args.format))
    if args.out:
        say(f"writing tables, charts and report.html to {args.out}")
        report.write_out(results, args.out, subtitle=_describe(args, total))
    say("done")
    return 0


def _describe(args: argparse.Namespace, total: int) -> str:
    parts = [f"{total:,} events from {args.events}"]
    for flag in ("project", "queue", "since", "until"):
        value = getattr(args, flag)
        if isinstance(value, float):
            value = iso8601(value)
        if value is not None:
            parts.append(f"{flag}={value}")
    return "; ".join(parts)


def main(argv: list[str] | None = None) -> int:
    """Entry point for spark-submit and ``python -m zq.analytics.job``."""
    parser = argparse.ArgumentParser(prog="zq-stats", description=__doc__.splitlines()[0])
    add_stats_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
