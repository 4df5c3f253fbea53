"""``zq serve``: run the HTTP API."""

from __future__ import annotations

import argparse
from dataclasses import replace

from zq.commands.options import (
    CommandError,
    UsageError,
    add_config_arguments,
    add_pooling_arguments,
    config_from_args,
)
from zq.config import Config, ServerConfig

DESCRIPTION = """\
Serve the Zaqar v2 API over HTTP on granian: several worker processes, each
with a few threads, each with its own storage connections and a garbage
collector that removes expired messages every [gc] interval seconds.

Without a storage URI, zq keeps its data in an SQLite file in the data
directory ($XDG_DATA_HOME/zq, else ~/.local/share/zq) and migrates it on
start. PostgreSQL and MariaDB databases are migrated with `zq db upgrade
--storage URI`.
SIGTERM stops the server gracefully: requests in flight are completed.

With --pooling, queues are spread over pools (storage backends) that an
admin registers at run time through /v2/pools and /v2/flavors; which pool
holds each queue is kept in the management store (--management, else an
SQLite file in the data directory, created and migrated on start; migrate
PostgreSQL or MariaDB with `zq db upgrade --management URI`). The storage
URI is then not used. See docs/pools.md."""

EPILOG = """\
examples:
  zq serve
  zq serve --port 9000 --workers 4
  zq serve --storage postgresql://zq@db.example.com/zq
  zq serve --config /etc/zq/zq.toml --host 0.0.0.0
  zq serve --pooling
  zq serve --pooling --management postgresql://zq@db.example.com/zq_management

Flags override the configuration file (--config or $ZQ_CONFIG), which is
overridden by ZQ_* environment variables; see `zq config`."""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "serve", help="run the HTTP API server", description=DESCRIPTION, epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--host", help="address to listen on (default: 127.0.0.1)")
    parser.add_argument("--port", type=int, help="TCP port, 0 for any free port (default: 8888)")
    parser.add_argument("--workers", type=int, metavar="N",
                        help="worker processes (default: 2)")
    add_config_arguments(parser)
    add_pooling_arguments(parser)
    parser.set_defaults(handler=run)


def run(args: argparse.Namespace) -> None:
    from zq.server import serve  # granian and falcon load only for this command

    serve(config_for(args))


def config_for(args: argparse.Namespace) -> Config:
    """The configuration with this command's flags applied on top."""
    flags = {"host": args.host, "port": args.port, "workers": args.workers}
    for name, value in flags.items():
        # A flag the server could not run with is a bad command line (exit
        # status 2); the same value from the file or the environment is a
        # failed command (1), refused by zq.server.check_server_config.
        problem = None if value is None else replace(ServerConfig(), **{name: value}).problem()
        if problem is not None:
            raise UsageError(f"--{name} {value}: {problem}")
    config = config_from_args(args, server=flags)
    if args.storage is not None and config.pooling.enabled:
        # Serving would ignore it: queues live on the registered pools.
        raise CommandError(
            "--storage is not used with pooling: queues live on the pools registered "
            "through /v2/pools. Leave out --storage, or add --no-pooling."
        )
    return config
