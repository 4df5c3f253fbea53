"""The Spark job behind ``zq stats``; also ``spark-submit zq/analytics/job.py --events DIR``.

Reads the exported events, reconstructs lifecycles, computes the tables of
``zq.analytics.tables``, registers everything as SQL views and prints the
tables (or the result of ``--sql``). The job uses only DataFrame operations,
no Python UDFs, so executors need nothing but Spark itself.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import IO, TYPE_CHECKING

if __name__ == "__main__" and not __package__:
    # Run as a script (spark-submit zq/analytics/job.py): make this checkout's
    # zq importable, ahead of any installed copy.
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from zq.analytics.arguments import (
    PLAIN_MAX_EVENTS,
    add_stats_arguments,
    stats_arguments_problem,
)
from zq.analytics.number_formats import plural
from zq.analytics.selection import DatasetMissing, EventFilter, Selection, select
from zq.analytics.spark import SparkMissing, spark_session

if TYPE_CHECKING:
    from pyspark.sql import DataFrame, SparkSession

    from zq.analytics.results import Result


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
    """Run the job for parsed ``args``; prints to ``out`` (stdout). Returns the exit code.

    The dataset is checked with pyarrow first: a missing path is an error and
    a selection without events is answered, both without starting Spark.
    """
    out = out if out is not None else sys.stdout
    say = progress or Progress()
    problem = stats_arguments_problem(args)
    if problem:
        print(f"zq: error: {problem}", file=sys.stderr)
        return 2
    where = EventFilter(project=args.project, queue=args.queue,
                        since=args.since, until=args.until)
    try:
        selection = select(args.events, where)
    except DatasetMissing as exc:
        print(f"zq: error: cannot read events from {args.events}: {exc}", file=sys.stderr)
        return 1
    if selection is not None and selection.events == 0:
        _no_events(args, where, selection, out)
        return 0
    if selection is not None:
        say(f"{selection.events:,} events match in {selection.files} files")
    if _plain_engine(args, spark, selection):
        return _run_plain(args, where, out, say)
    log = None
    if spark is None and not getattr(args, "verbose", False):
        handle, log = tempfile.mkstemp(prefix="zq-stats-spark-", suffix=".log")
        os.close(handle)
    code = 1
    try:
        code = _run(args, where, spark, out, say, log)
    except SparkMissing as exc:
        print(f"zq: error: {exc}", file=sys.stderr)
    finally:
        if log is not None and (code == 0 or os.path.getsize(log) == 0):
            os.unlink(log)
        elif log is not None:
            print(f"zq: Spark's own log is in {log}", file=sys.stderr)
    return code


def _plain_engine(args: argparse.Namespace, spark: SparkSession | None,
                  selection: Selection | None) -> bool:
    """Whether to count in plain Python (zq.analytics.plain) rather than start Spark."""
    engine = getattr(args, "engine", "auto")
    if engine != "auto":
        return engine == "python"
    submitted = "PYSPARK_GATEWAY_PORT" in os.environ  # under spark-submit: Spark it is
    return (spark is None and not submitted and selection is not None and not args.sql
            and not args.master and args.action != "advise"
            and selection.events <= PLAIN_MAX_EVENTS)


def _run_plain(args: argparse.Namespace, where: EventFilter, out: IO[str],
               say: Callable[[str], None]) -> int:
    from zq.analytics import plain, report
    from zq.analytics.selection import read

    say(f"reading events from {args.events} (plain Python: a small selection, no Spark)")
    try:
        rows = plain.rows_of(read(args.events, where))
    except DatasetMissing as exc:
        print(f"zq: error: cannot read events from {args.events}: {exc}", file=sys.stderr)
        return 1
    say(f"{len(rows):,} events selected")
    if args.action == "signatures":
        return _drill_down(args, plain.signature_messages(rows, args.signatures), out, say)
    width = _bucket(args, *plain.time_range(rows), say)
    results = plain.compute(rows, top=args.top, bucket=width)
    out.write(report.render(list(results.values()), args.format))
    if args.out:
        chosen = results["poison_signatures"].column("signature_id")
        drill = plain.signature_messages(rows, chosen)
        _write_report(args, where, len(rows), results, drill, say)
    say("done")
    return 0


def _bucket(args: argparse.Namespace, first: float | None, last: float | None,
            say: Callable[[str], None]) -> int:
    """The trend tables' bucket width: --bucket, or chosen from the events' time range."""
    from zq.analytics import buckets

    requested = getattr(args, "bucket", None)
    width = buckets.choose(first, last, requested)
    why = "--bucket" if requested is not None else buckets.auto_reason(first, last)
    say(f"trend buckets of {buckets.describe(width)} ({why})")
    return width


def _drill_down(args: argparse.Namespace, messages: Result, out: IO[str],
                say: Callable[[str], None]) -> int:
    """``zq stats signatures``: every message id of the chosen (or every) signature."""
    from zq.analytics import report

    missing = sorted(set(args.signatures or ()) - set(messages.column("signature_id")))
    if missing:
        print(f"zq: error: no failing message has signature {', '.join(missing)} in the "
              "selected events (the signature_id column of poison_signatures names them)",
              file=sys.stderr)
        return 1
    out.write(report.render([messages], args.format))
    if args.out:
        say(f"writing {messages.name} to {args.out}")
        report.write_table(messages, args.out)
    say(f"{len(messages.rows):,} {plural(len(messages.rows), 'message')}")
    return 0


def _write_report(args: argparse.Namespace, where: EventFilter, total: int,
                  results: dict[str, Result], drill: Result,
                  say: Callable[[str], None]) -> None:
    from zq.analytics import report

    say(f"writing tables, charts, report.html and the signatures' message ids to {args.out}")
    report.write_out(results, args.out, subtitle=_describe(args, where, total),
                     drill_down=drill, events=args.events)


def _no_events(args: argparse.Namespace, where: EventFilter, selection: Selection,
               out: IO[str]) -> None:
    """Answer a selection without events: one line, and empty tables for a script."""
    chosen = where.describe()
    if selection.files == 0:
        days = " on the chosen days" if where.since is not None or where.until is not None else ""
        message = f"no events matched: {args.events} holds no exported events{days}"
    else:
        message = f"no events matched {chosen} in {args.events}"
    if args.out:
        message += f" (nothing written to {args.out})"
    if args.format == "table":
        out.write(message + "\n")
        return
    print(f"zq stats: {message}", file=sys.stderr)
    if args.format == "json":
        from zq.analytics.advice import columns
        from zq.analytics.plain import DRILL_DOWN
        from zq.analytics.report import TABLE_NAMES

        names = (["sql"] if args.sql else list(columns()) if args.action == "advise"
                 else [DRILL_DOWN[0]] if args.action == "signatures" else list(TABLE_NAMES))
        out.write(json.dumps({name: [] for name in names}, indent=2) + "\n")


def _run(args: argparse.Namespace, where: EventFilter, spark: SparkSession | None,
         out: IO[str], say: Callable[[str], None], log: str | None) -> int:
    if spark is None:
        say("starting Spark" + (f" (its own log: {log}; --verbose shows it here)" if log else ""))
        spark = spark_session(args.master, conf=dict(args.conf), log=log)
        say(f"Spark {spark.version} on {spark.sparkContext.master}")
    from pyspark.errors import AnalysisException
    from pyspark.sql import functions as F

    from zq.analytics import lifecycles as lc
    from zq.analytics import report, tables
    from zq.analytics.attempts import signature_messages
    from zq.analytics.results import collect

    say(f"reading events from {args.events}")
    try:
        # --sql may query any column; the tables need fewer (see UNUSED_BY_TABLES).
        # Not cached: each table reads from Parquet only the columns it
        # needs, which costs less CPU than decoding every column once to
        # build an in-memory copy and then decoding that copy per table (the
        # per-message steps, read by many tables, are cached below).
        events = lc.read_events(spark, args.events, where, every_column=bool(args.sql))
        total = events.count()
    except AnalysisException as exc:
        print(f"zq: error: cannot read events from {args.events}: {exc}", file=sys.stderr)
        return 1
    say(f"{total:,} events selected")
    if args.action == "signatures":
        say("grouping failing messages by signature")
        drill = signature_messages(events)
        if args.signatures:
            drill = drill.where(F.col("signature_id").isin(args.signatures))
        return _drill_down(args, collect("signature_messages", drill), out, say)
    say("reconstructing message lifecycles (window functions)")
    steps = lc.message_events(events if args.sql else events.drop(*lc.UNUSED_BY_STEPS)).cache()
    if args.action == "advise":
        return _advise(args, where, steps, out, say, total)
    holds = lc.claim_holds(steps)
    lifecycles = lc.lifecycles(steps)
    width = _bucket(args, *tables.time_range(events), say)
    computed = tables.compute(events, steps, holds, top=args.top, bucket=width)
    views = {"events": events, "message_events": steps, "claims": holds,
             "lifecycles": lifecycles, "signature_messages": signature_messages(events),
             **computed}
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
        say(f"{len(result.rows)} {plural(len(result.rows), 'row')}")
        return 0

    results = {}
    for name, frame in computed.items():
        say(f"computing {name}")
        results[name] = collect(name, frame)
        say(f"  {name}: {len(results[name].rows)} {plural(len(results[name].rows), 'row')}")
    out.write(report.render(list(results.values()), args.format))
    if args.out:
        chosen = results["poison_signatures"].column("signature_id")
        say("collecting the message ids of the signatures shown")
        drill = collect("signature_messages", views["signature_messages"]
                        .where(F.col("signature_id").isin(chosen)))
        _write_report(args, where, total, results, drill, say)
    say("done")
    return 0


def _advise(args: argparse.Namespace, where: EventFilter, steps: DataFrame, out: IO[str],
            say: Callable[[str], None], total: int) -> int:
    """``zq stats advise``: Spark reduces, zq.analytics.advice decides."""
    from zq.analytics import advice, attempts, report
    from zq.analytics.results import Result, collect

    messages = attempts.per_message(steps)
    reduced = {}
    for name, frame in (("attempt_counts", attempts.attempt_counts(messages)),
                        ("attempt_gaps", attempts.attempt_gaps(steps)),
                        ("recoveries", attempts.recoveries(messages))):
        say(f"computing {name}")
        reduced[name] = collect(name, frame).records()
    options = {"tolerance": args.tolerance, "min_failing": args.min_failing}
    tables = advice.advise(advice.queues_from(*reduced.values()),
                           **{k: v for k, v in options.items() if v is not None})
    columns = advice.columns()
    results = {name: Result(name, columns[name],
                                   [tuple(row[c] for c in columns[name]) for row in rows])
               for name, rows in tables.items()}
    text = report.render(list(results.values()), args.format)
    if args.format == "table":
        # The advice sentences are longer than a table cell shows.
        text += "\n== recommendations\n" + "".join(
            f"{row['project']}/{row['queue']}: {row['advice']}\n" for row in tables["advice"])
    out.write(text)
    if args.out:
        say(f"writing the advice tables, chart and report.html to {args.out}")
        report.write_out(results, args.out, title="zq retry-policy advice",
                         subtitle=_describe(args, where, total))
    say("done")
    return 0


def _describe(args: argparse.Namespace, where: EventFilter, total: int) -> str:
    chosen = where.describe()
    return f"{total:,} events from {args.events}" + (f"; {chosen}" if chosen else "")


def main(argv: list[str] | None = None) -> int:
    """Entry point for spark-submit and ``python -m zq.analytics.job``."""
    parser = argparse.ArgumentParser(prog="zq-stats", description=__doc__.splitlines()[0])
    add_stats_arguments(parser)
    args = parser.parse_args(argv)
    # Under spark-submit, Spark's PythonRunner merges this process's stderr
    # into its stdout: progress lines would corrupt JSON or CSV there.
    quiet = "PYSPARK_GATEWAY_PORT" in os.environ and args.format != "table"
    return run(args, progress=(lambda _: None) if quiet else None)


if __name__ == "__main__":
    sys.exit(main())
