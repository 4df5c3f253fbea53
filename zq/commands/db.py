"""``zq db upgrade``: bring an SQL storage or management store to the current schema."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from zq.commands.options import (
    CommandError,
    add_config_arguments,
    config_from_args,
)
from zq.config import Config
from zq.startup import ensure_default_data_dir, ensure_management_dir, first_line
from zq.storage import REDIS_SCHEMES, check_uri, scheme_of
from zq.storage.uri import redact

SQL_SCHEMES = ("sqlite", "postgresql", "postgres", "mysql", "mariadb")

DESCRIPTION = """\
Manage the schema of an SQL storage (SQLite, PostgreSQL, MariaDB/MySQL),
the key layout of a Redis storage and the schema of the pooling management
store. MongoDB storages have no schema and need no migration."""

UPGRADE_DESCRIPTION = """\
Apply every Alembic migration the database does not have yet, creating the
tables on an empty database. Running it again is harmless. `zq serve`
migrates an SQLite database by itself; run this for PostgreSQL and MariaDB
before starting (or after upgrading) the servers. On Redis it converts data
written by an earlier zq to the current key layout (stop every server of
that storage first; servers refuse to start on an older layout).

What it migrates: the storage by default. --management [URI] migrates the
pooling management store (pools, flavors, catalog) instead: the URI given,
else [pooling] management, else the SQLite file in the data directory. Give
--storage as well to migrate both. The management store has its own version
table (zq_management_version), so both may share one database."""

UPGRADE_EPILOG = """\
examples:
  zq db upgrade --storage postgresql://zq@db.example.com/zq
  zq db upgrade --storage mysql://zq@db.example.com/zq
  zq db upgrade --storage redis://redis.example.com:6379/0?prefix=zq
  zq db upgrade --config /etc/zq/zq.toml
  zq db upgrade --management postgresql://zq@db.example.com/zq_management
  zq db upgrade --management --config /etc/zq/zq.toml   # [pooling] management
  zq db upgrade --storage postgresql://zq@db/zq --management postgresql://zq@db/zq"""


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "db", help="manage the SQL schema (upgrade)", description=DESCRIPTION,
        epilog="examples:\n  zq db upgrade --storage postgresql://zq@localhost/zq",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    actions = parser.add_subparsers(title="actions", metavar="ACTION", required=True)
    upgrade = actions.add_parser(
        "upgrade", help="apply the schema migrations",
        description=UPGRADE_DESCRIPTION, epilog=UPGRADE_EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    add_config_arguments(upgrade)
    upgrade.add_argument(
        "--management", dest="management_store", nargs="?", const=FROM_CONFIG, metavar="URI",
        help="migrate the pooling management store (URI, else [pooling] management, else "
             "SQLite in the data directory) instead of the storage; with --storage, both",
    )
    upgrade.set_defaults(handler=run_upgrade)


# `--management` given without a URI: the configured management store.
FROM_CONFIG = ""


def run_upgrade(args: argparse.Namespace) -> None:
    config = config_from_args(args)
    if args.management_store is None or args.storage is not None:
        upgrade_storage(config)
    if args.management_store is not None:
        upgrade_management_store(config, args.management_store)


def upgrade_storage(config: Config) -> None:
    """Migrate the configured storage (or say it has no schema)."""
    from zq.storage.sql import migrate

    uri = config.storage.resolved_uri()
    check_uri(uri)
    scheme = scheme_of(uri)
    if scheme in REDIS_SCHEMES:
        upgrade_redis(uri)
        return
    if scheme not in SQL_SCHEMES:
        print(f"{redact(uri)} is a {scheme} storage: it has no schema, nothing to migrate.")
        return
    ensure_default_data_dir(config)
    migrate_with(uri, "schema", migrate.current_revision, migrate.upgrade)


def upgrade_redis(uri: str) -> None:
    """Convert a Redis storage to the current key layout and say what changed."""
    from zq.clock import SystemClock
    from zq.storage.redis.layout import upgrade_uri

    try:
        before, after = upgrade_uri(uri, SystemClock())
    except Exception as exc:  # the driver's own message names the cause
        raise CommandError(f"cannot upgrade {redact(uri)}: {first_line(exc)}") from exc
    if before is None:
        print(f"{redact(uri)} holds no zq data yet; marked with Redis key layout {after}.")
    elif before == after:
        print(f"{redact(uri)} is already at Redis key layout {after}.")
    else:
        print(f"Converted {redact(uri)} from Redis key layout {before} to {after}.")


def upgrade_management_store(config: Config, uri: str) -> None:
    """Migrate the management store at ``uri`` (empty: the configured one)."""
    from zq.pooling import migrate

    if not uri:
        uri = config.pooling.resolved_management()
        ensure_management_dir(config)
    check_uri(uri)
    scheme = scheme_of(uri)
    if scheme not in SQL_SCHEMES:
        raise CommandError(f"the management store must be an SQL database, "
                           f"not {scheme}: {redact(uri)}")
    migrate_with(uri, "management schema", migrate.current_revision,
                 migrate.upgrade_management)


def migrate_with(
    uri: str,
    what: str,
    current_revision: Callable[[str], str | None],
    upgrade: Callable[[str], None],
) -> None:
    """Upgrade ``uri`` and say what changed: created, already current, or upgraded.

    ``what`` is the schema's name in the messages: "schema" (the storage)
    or "management schema".
    """
    try:
        before = current_revision(uri)
        upgrade(uri)
        after = current_revision(uri)
    except Exception as exc:  # the driver's own message names the cause
        raise CommandError(f"cannot migrate {redact(uri)}: {first_line(exc)}") from exc
    if before == after:
        print(f"{redact(uri)} is already at the latest {what} revision {after}.")
    elif before is None:
        print(f"Created the zq {what} in {redact(uri)} (revision {after}).")
    else:
        print(f"Upgraded {redact(uri)} from {what} revision {before} to {after}.")

