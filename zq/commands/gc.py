"""``zq gc``: one garbage collection run."""

from __future__ import annotations

import argparse

from zq.commands.options import add_config_arguments, config_from_args, open_reachable_storage
from zq.storage.uri import redact

DESCRIPTION = """\
Remove expired messages and claims from the storage once, recording an
`expired` event for each, and print how many messages were removed.

Expired messages are already invisible to clients; collection reclaims their
space. `zq serve` collects periodically by itself ([gc] interval), so this
command is for maintenance windows and cron jobs. It is safe to run while
servers are running."""

EPILOG = """\
examples:
  zq gc
  zq gc --storage postgresql://zq@db.example.com/zq"""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "gc", help="remove expired messages and claims once",
        description=DESCRIPTION, epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_config_arguments(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> None:
    uri = config_from_args(args).storage.resolved_uri()
    storage = open_reachable_storage(uri)
    try:
        removed = storage.gc()
    finally:
        storage.close()
    print(f"Removed {removed} expired message(s) from {redact(uri)}.")
