"""``zq gc``: one garbage collection run, over the storage or every pool."""

from __future__ import annotations

import argparse
import sys

from zq.commands.options import (
    add_config_arguments,
    add_pooling_arguments,
    config_from_args,
)
from zq.commands.pooling import StorageTarget, backends
from zq.startup import first_line, open_reachable_storage

DESCRIPTION = """\
Remove expired messages and claims from the storage once, recording an
`expired` event for each message and for each claim that still held
messages, and print how many messages and claims were removed.

Expired messages are already invisible to clients; collection reclaims their
space. `zq serve` collects periodically by itself ([gc] interval), so this
command is for maintenance windows and cron jobs. It is safe to run while
servers are running.

With pooling on (--pooling or [pooling] enabled), every pool registered in
the management store is collected, one line per pool; a pool that cannot be
reached is reported on stderr, the others are still collected, and the exit
status is then 1. --storage collects that one storage, pooling or not."""

EPILOG = """\
examples:
  zq gc
  zq gc --storage postgresql://zq@db.example.com/zq
  zq gc --pooling                                    # every pool
  zq gc --pooling --management postgresql://zq@db.example.com/zq_management"""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "gc", help="remove expired messages and claims once",
        description=DESCRIPTION, epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_config_arguments(parser)
    add_pooling_arguments(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    config = config_from_args(args)
    if args.storage is not None or not config.pooling.enabled:
        collect(StorageTarget(config.storage.resolved_uri()))  # failures: one line, exit 1
        return 0
    targets = backends(config)
    if not targets:
        print("No pools are registered: nothing to collect.")
        return 0
    failed = 0
    for target in targets:
        try:
            collect(target)
        except Exception as exc:  # one pool down must not stop the others
            print(f"zq: error: {target.label}: {first_line(exc)}", file=sys.stderr)
            failed += 1
    return 1 if failed else 0


def collect(target: StorageTarget) -> None:
    """Collect one backend and say how many messages and claims went."""
    storage = open_reachable_storage(target.uri)
    try:
        collected = storage.gc()
    finally:
        storage.close()
    moved = (f"; moved {collected.moved} expired message(s) to dead letter queues"
             if collected.moved else "")
    subscriptions = (f"; removed {collected.subscriptions} expired subscription(s)"
                     if collected.subscriptions else "")
    print(f"Removed {collected.messages} expired message(s) and {collected.claims} expired "
          f"claim(s) from {target.label}{moved}{subscriptions}.")

