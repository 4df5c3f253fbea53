"""``zq db upgrade``: bring an SQL database to the current schema."""

from __future__ import annotations

import argparse

from zq.commands.options import (
    CommandError,
    add_config_arguments,
    config_from_args,
    ensure_default_data_dir,
)
from zq.storage import scheme_of
from zq.storage.uri import redact

SQL_SCHEMES = ("sqlite", "postgresql", "postgres", "mysql", "mariadb")

DESCRIPTION = """\
Manage the schema of an SQL storage (SQLite, PostgreSQL, MariaDB/MySQL).
Redis and MongoDB storages have no schema and need no migration."""

UPGRADE_DESCRIPTION = """\
Apply every Alembic migration the database does not have yet, creating the
tables on an empty database. Running it again is harmless. `zq serve`
migrates an SQLite database by itself; run this for PostgreSQL and MariaDB
before starting (or after upgrading) the servers."""

UPGRADE_EPILOG = """\
examples:
  zq db upgrade --storage postgresql://zq@db.example.com/zq
  zq db upgrade --storage mysql://zq@db.example.com/zq
  zq db upgrade --config /etc/zq/zq.toml"""


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
    upgrade.set_defaults(handler=run_upgrade)


def run_upgrade(args: argparse.Namespace) -> None:
    config = config_from_args(args)
    uri = config.storage.resolved_uri()
    scheme = scheme_of(uri)
    if scheme not in SQL_SCHEMES:
        print(f"{redact(uri)} is a {scheme} storage: it has no schema, nothing to migrate.")
        return
    from zq.storage.sql import migrate

    ensure_default_data_dir(config)
    try:
        before = migrate.current_revision(uri)
        migrate.upgrade(uri)
        after = migrate.current_revision(uri)
    except Exception as exc:  # the driver's own message names the cause
        raise CommandError(f"cannot migrate {redact(uri)}: {first_line(exc)}") from exc
    if before == after:
        print(f"{redact(uri)} is already at the latest schema revision {after}.")
    elif before is None:
        print(f"Created the zq schema in {redact(uri)} (revision {after}).")
    else:
        print(f"Upgraded {redact(uri)} from schema revision {before} to {after}.")


def first_line(exc: Exception) -> str:
    """A database error's first line (SQLAlchemy appends SQL and links below it)."""
    text = str(getattr(exc, "orig", None) or exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__
