"""Command line: ``zq events export`` and ``zq stats``.

``register(subparsers)`` adds both commands to zq's top-level parser; each
sets ``handler`` (``handler(args) -> int`` exit code). Nothing here imports
pyspark, pyarrow or matplotlib at module import time, so ``zq --help`` stays
fast and works without the ``spark`` extra.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

from zq.analytics.arguments import add_stats_arguments, positive, positive_seconds, seconds

# Wrapped by hand, as every zq command's: the formatter keeps the epilog's
# example lines as written, so it prints descriptions as written too.
EVENTS_DESCRIPTION = """\
Work with the event log every backend keeps: each post, claim, renewal,
release, delete, dead letter move and expiry is an event."""

EXPORT_DESCRIPTION = """\
Append every new event of each backend to a date-partitioned Parquet
dataset; safe to re-run after a crash. Without --storage: the configured
storage, or with pooling on (--pooling or [pooling] enabled) every pool of
the management store, one line per pool; a pool that fails is reported and
the others are still exported (exit status 1). Needs the spark extra
(pyarrow): pip install 'zq[spark]'."""

STATS_DESCRIPTION = """\
Compute per-queue counts, claims per message, latencies, failing
fingerprints, poison signatures and consumers from exported events, with
PySpark. 'zq stats advise' instead recommends _max_claim_count and a
backoff per queue, with the evidence, and 'zq stats signatures' lists every
message of a poison signature (docs/analytics.md)."""


def add_export_arguments(parser: argparse.ArgumentParser) -> None:
    """The options of ``zq events export``."""
    from zq.commands.options import add_pooling_arguments

    parser.add_argument("--to", required=True, metavar="DIR",
                        help="dataset root (local path, hdfs://, s3a://)")
    parser.add_argument("--storage", dest="storages", action="append", default=[],
                        metavar="URI",
                        help="backend to drain (repeatable; default: the configured storage, "
                             "or every pool when pooling is on)")
    parser.add_argument("--config", metavar="FILE", help="zq configuration file (TOML)")
    parser.add_argument("--batch-size", type=positive, default=50_000,
                        help="events per Parquet file and per cursor step (default 50000)")
    parser.add_argument("--no-trim", dest="trim", action="store_false",
                        help="leave exported events in the backend log")
    parser.add_argument("--settle", type=seconds, default=None, metavar="SECONDS",
                        help="on MariaDB/MySQL and MongoDB without transactions, export only "
                             "events at least this old, so an event whose transaction commits "
                             "late is never skipped (default 30); other backends need no window")
    parser.add_argument("--subscription-hold", type=positive_seconds, default=None,
                        metavar="SECONDS",
                        help="the longest a live subscription keeps events it has not been "
                             "notified of from the trim (default 86400); older ones are "
                             "trimmed and reported")
    add_pooling_arguments(parser)


def register(subparsers: Any) -> None:
    """Add ``events`` (with ``export``) and ``stats`` to zq's subcommands."""
    events = subparsers.add_parser(
        "events", help="the event log of claim statistics",
        description=EVENTS_DESCRIPTION,
        epilog="examples:\n  zq events export --to /data/zq-events\n"
               "  zq events export --to s3a://bucket/zq-events --storage redis://cache:6379",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    actions = events.add_subparsers(dest="events_command", metavar="ACTION", required=True)
    export = actions.add_parser(
        "export", help="drain the backends' event logs into a Parquet dataset",
        description=EXPORT_DESCRIPTION,
        epilog="examples:\n  zq events export --to /data/zq-events\n"
               "  zq events export --to /data/zq-events --storage postgresql://zq@db/zq "
               "--storage redis://cache:6379\n"
               "  zq events export --to /data/zq-events --pooling   # every pool",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    add_export_arguments(export)
    export.set_defaults(handler=run_export)

    stats = subparsers.add_parser(
        "stats", help="claim statistics with Spark over an exported dataset",
        description=STATS_DESCRIPTION,
        epilog="examples:\n  zq stats --events /data/zq-events\n"
               "  zq stats --events /data/zq-events --queue orders --format json\n"
               "  zq stats --events /data/zq-events --out /tmp/report  # CSV, Parquet, PNG, HTML\n"
               "  zq stats --events /data/zq-events --sql \"SELECT queue, count(*) FROM events "
               "GROUP BY queue\"\n"
               "  zq stats --events /data/zq-events --since 2026-11-27T09:00Z --bucket 5m\n"
               "  zq stats signatures --events /data/zq-events --signature bea0bcd6026f "
               "--format csv  # every message id of one poison signature\n"
               "  zq stats advise --events /data/zq-events               # retry-policy advice\n"
               "  zq stats advise --events /data/zq-events --queue orders --tolerance 0 "
               "--format json\n"
               "  zq stats advise --events /data/zq-events --out /tmp/advice  # CSV, PNG, HTML",
        formatter_class=argparse.RawDescriptionHelpFormatter)
    add_stats_arguments(stats)
    stats.set_defaults(handler=run_stats)


def _say(message: str) -> None:
    print(f"[zq] {message}", file=sys.stderr, flush=True)


def run_export(args: argparse.Namespace) -> int:
    """``zq events export``: each backend (storage or pool) drained on its own."""
    try:
        from zq.analytics.export import DEFAULT_SETTLE, ExportError, backend_id, export
    except ImportError as exc:  # pyarrow, of the spark extra
        return _needs_extra("zq events export", exc)
    from zq.commands.options import UsageError, config_from_args
    from zq.commands.pooling import StorageTarget, backends
    from zq.config import ConfigError
    from zq.errors import ZqError
    from zq.notifications.retention import HOLD_SECONDS
    from zq.startup import StartupError, first_line
    from zq.storage import open_storage

    try:
        targets = ([StorageTarget(uri) for uri in args.storages] if args.storages
                   else backends(config_from_args(args)))
    except UsageError:
        raise  # a bad flag: zq.cli shows the usage, exit status 2
    except (ConfigError, StartupError) as exc:
        print(f"zq: error: {exc}", file=sys.stderr)
        return 1
    if not targets:
        print("No pools are registered: nothing to export.")
        return 0
    started = time.monotonic()
    failed = 0
    for target in targets:
        # One backend at a time: a pool that fails must not stop the others.
        name = backend_id(target.uri)
        shown = name if target.pool is None else f"pool {target.pool!r} ({name})"
        storage = None
        try:
            storage = open_storage(target.uri)
            settle = DEFAULT_SETTLE if args.settle is None else args.settle
            hold = (HOLD_SECONDS if args.subscription_hold is None
                    else args.subscription_hold)
            (result,) = export({name: storage}, args.to, batch_size=args.batch_size,
                               trim=args.trim, progress=_say, settle=settle,
                               subscription_hold=hold)
        except (ExportError, ZqError, ValueError, OSError) as exc:
            print(f"zq: error: {shown}: {first_line(exc)}", file=sys.stderr)
            failed += 1
            continue
        finally:
            if storage is not None:
                storage.close()
        print(f"{shown}: {result.events} events exported, {len(result.files)} files, "
              f"{result.trimmed} trimmed, cursor {result.cursor}")
        if result.held_back:
            events = "event" if result.held_back == 1 else "events"
            print(f"{shown}: {result.held_back:,} newer {events} held back: "
                  f"{result.held_back_reason()}")
        if args.settle is not None and result.settle is None:
            print(f"{shown}: --settle has no effect: this backend's event order is final, "
                  "so it needs no window")
    _say(f"done in {time.monotonic() - started:.1f}s")
    return 1 if failed else 0


def run_stats(args: argparse.Namespace) -> int:
    """``zq stats``: imports the job (pyarrow) only now, and Spark only if needed."""
    problem = out_problem(args.out)
    if problem is not None:  # before the work, not when writing its results
        print(f"zq: error: {problem}", file=sys.stderr)
        return 1
    try:
        from zq.analytics.job import run
    except ImportError as exc:
        return _needs_extra("zq stats", exc, " (and a Java 17+ runtime)")
    return run(args)


def out_problem(out: str | None) -> str | None:
    """Why ``--out`` cannot be the directory the results go to; None when it can.

    The directory is created when missing, so only something in the way
    is a problem: ``out`` itself, or one of its parents, being a file.
    """
    if not out:
        return None
    path = Path(out)
    for place in (path, *path.parents):
        if place.exists():
            if place.is_dir():
                return None
            if place == path:
                return f"--out {out} is a file: name a directory (it is created if missing)."
            return f"--out {out} cannot be created: {place} is a file, not a directory."
    return None


def _needs_extra(command: str, exc: ImportError, also: str = "") -> int:
    """Say which extra installs what ``command`` could not import; exit status 1."""
    from zq.analytics.spark import INSTALL_HINT

    print(f"zq: error: {command} needs the spark extra ({exc}): {INSTALL_HINT}{also}.",
          file=sys.stderr)
    return 1

