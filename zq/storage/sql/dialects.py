"""What differs between SQLite, PostgreSQL and MariaDB/MySQL, in one place.

Everything else in the SQL driver is dialect-neutral SQLAlchemy Core. The
differences are: how a user's URI maps to a driver, how connections are set
up (SQLite pragmas, MySQL character set and isolation level), how a write
transaction starts (SQLite serializes writers with BEGIN IMMEDIATE; the
servers lock claim candidates with FOR UPDATE SKIP LOCKED, which SQLAlchemy
leaves out on SQLite), "insert unless present", which errors mean "try the
transaction again". PostgreSQL's one-statement writes are
zq.storage.sql.postgresql.
"""

from __future__ import annotations

from typing import Any

import sqlalchemy as sa
from sqlalchemy import event, exc
from sqlalchemy.dialects import mysql, postgresql, sqlite
from sqlalchemy.engine import URL, Engine, make_url
from sqlalchemy.pool import StaticPool

from zq.errors import BACKEND_UNREACHABLE, InvalidRequest, StorageUnavailable
from zq.storage.uri import redact, scrub

# Connection option that makes a SQLite transaction take the write lock at
# BEGIN, so two writers never both read the same free messages.
WRITE_OPTION = "zq_write"

SQLITE_BUSY_TIMEOUT_MS = 30_000
# Seconds libpq may take to connect to one host of a PostgreSQL URI, unless
# the URI sets connect_timeout itself.
PG_CONNECT_TIMEOUT = 5

# Scheme as users write it -> SQLAlchemy driver name.
_DRIVERS = {
    "postgresql": "postgresql+psycopg",
    "postgres": "postgresql+psycopg",
    "mysql": "mysql+pymysql",
    "mariadb": "mysql+pymysql",
}

# MySQL/MariaDB: deadlock, lock wait timeout. PostgreSQL: serialization
# failure, deadlock. SQLite: a busy database past busy_timeout.
_MYSQL_RETRY_CODES = {1205, 1213}
_PG_RETRY_STATES = {"40001", "40P01"}
# PostgreSQL: read-only transaction (a standby, or a primary turned one),
# administrator or crash shutdown, cannot connect now (starting, in recovery).
_PG_NOT_PRIMARY_STATES = {"25006", "57P01", "57P02", "57P03"}


def to_sqlalchemy_url(uri: str) -> URL:
    """A user's storage URI -> the SQLAlchemy URL with the driver zq uses."""
    scheme, sep, rest = uri.partition("://")
    if not sep:
        raise ValueError(f"Not a storage URI: {uri!r}")
    driver = _DRIVERS.get(scheme.lower(), scheme)
    if driver.startswith("postgresql"):
        rest = _hosts_into_query(rest)
    url = make_url(f"{driver}://{rest}")
    if url.get_backend_name() == "mysql" and "charset" not in url.query:
        url = url.update_query_dict({"charset": "utf8mb4"})
    return url


def _hosts_into_query(rest: str) -> str:
    """libpq's ``u@h1:5432,h2:5433/db`` -> SQLAlchemy's ``u@/db?host=h1:5432&host=h2:5433``.

    SQLAlchemy reads one host and port from the authority (the list would
    end up in ``int()``), but takes several from repeated ``host=``
    options, which psycopg hands to libpq as its host list; libpq then
    tries them in order and, with ``target_session_attrs=read-write``,
    keeps the one that is the writable primary. The userinfo ends at the
    last ``@`` before the query, as in zq.storage.uri.
    """
    query_at = rest.find("?")
    authority_end = len(rest) if query_at < 0 else query_at
    slash = rest.find("/", rest.rfind("@", 0, authority_end) + 1)
    if 0 <= slash < authority_end:
        authority_end = slash
    hosts_at = rest.rfind("@", 0, authority_end) + 1
    hosts = rest[hosts_at:authority_end]
    if "," not in hosts:
        return rest
    entries = hosts.split(",")
    if any(not entry or entry.startswith("[") for entry in entries):
        raise ValueError(
            f"PostgreSQL host list {hosts!r}: every entry must be host or host:port "
            "(an IPv6 address in a list is written as a name, or with ?host=[addr]:port)."
        )
    if "host=" in rest[authority_end:] or "port=" in rest[authority_end:]:
        raise ValueError(
            f"PostgreSQL host list {hosts!r}: name the hosts either in the address or "
            "with ?host= options, not both."
        )
    tail = rest[authority_end:]
    path, _, query = tail.partition("?")
    options = "&".join(f"host={entry}" for entry in entries)
    return f"{rest[:hosts_at]}{path or '/'}?{options}{'&' + query if query else ''}"


def create_engine(uri: str) -> Engine:
    """An engine for ``uri``, pooled for a multi-threaded server (InvalidRequest if unusable)."""
    from zq.storage import check_uri

    check_uri(uri)  # a clear refusal, before the driver's own error
    try:
        url = to_sqlalchemy_url(uri)
    except (ValueError, exc.ArgumentError) as error:
        raise InvalidRequest(scrub(f"Storage URI {redact(uri)}: {error}", uri)) from error
    backend = url.get_backend_name()
    if backend == "sqlite":
        return _sqlite_engine(url)
    options: dict[str, Any] = {
        "pool_size": 10,
        "max_overflow": 20,
        "pool_pre_ping": True,
        "pool_recycle": 1800,
    }
    if backend == "mysql":
        # READ COMMITTED avoids InnoDB gap locks, which turn concurrent
        # claims and posts on one queue into deadlocks.
        options["isolation_level"] = "READ COMMITTED"
    if backend == "postgresql" and "connect_timeout" not in url.query:
        # libpq waits as long as TCP does for a host that neither answers
        # nor refuses (minutes): a request would hang past its bound.
        url = url.update_query_dict({"connect_timeout": str(PG_CONNECT_TIMEOUT)})
    engine = sa.create_engine(url, **options)
    if backend == "postgresql":
        event.listen(engine, "handle_error", _drop_connections_to_a_standby)
    return engine


def _drop_connections_to_a_standby(context: Any) -> None:
    """Treat "this server is not (or no longer) the primary" as a lost connection.

    After a failover a pooled connection may still reach the old primary,
    now read-only or shutting down. Marked as a disconnect, the pool drops
    it and every connection opened before it, and the next checkout asks
    libpq again for a host that takes writes (``target_session_attrs``).
    """
    state = getattr(context.original_exception, "sqlstate", None)
    if state in _PG_NOT_PRIMARY_STATES:
        context.is_disconnect = True


def _sqlite_engine(url: URL) -> Engine:
    memory = url.database in (None, "", ":memory:")
    if memory:
        engine = sa.create_engine(
            url, poolclass=StaticPool, connect_args={"check_same_thread": False}
        )
    else:
        # No mkdir: zq creates only its data directory (zq.storage.check_uri).
        engine = sa.create_engine(
            url, connect_args={"check_same_thread": False, "timeout": SQLITE_BUSY_TIMEOUT_MS / 1000}
        )

    @event.listens_for(engine, "connect")
    def _on_connect(dbapi_connection: Any, _record: Any) -> None:
        # Let SQLAlchemy's "begin" event emit BEGIN itself (pysqlite's own
        # transaction handling cannot start an IMMEDIATE transaction).
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        if not memory:
            cursor.execute("PRAGMA journal_mode=WAL")
            cursor.execute("PRAGMA synchronous=NORMAL")
        cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.close()

    @event.listens_for(engine, "begin")
    def _on_begin(connection: sa.Connection) -> None:
        immediate = connection.get_execution_options().get(WRITE_OPTION)
        connection.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")

    return engine


def insert_if_absent_cte(table: sa.Table, values: dict[str, Any], name: str) -> sa.CTE:
    """PostgreSQL: "INSERT unless the primary key exists" as a WITH query."""
    return postgresql.insert(table).values(values).on_conflict_do_nothing().cte(name)


def insert_if_absent(conn: sa.Connection, table: sa.Table, values: dict[str, Any]) -> bool:
    """INSERT unless the primary key exists; whether a row was inserted."""
    name = conn.dialect.name
    if name in ("postgresql", "sqlite"):
        # RETURNING, because psycopg reports no rowcount for this INSERT.
        insert = postgresql.insert if name == "postgresql" else sqlite.insert
        statement = insert(table).values(values).on_conflict_do_nothing()
        return conn.execute(statement.returning(sa.literal(1))).first() is not None
    statement = mysql.insert(table).values(values).prefix_with("IGNORE")
    return conn.execute(statement).rowcount == 1


def statements_autocommit(dialect: str) -> bool:
    """Whether reads and one-statement writes may run without BEGIN/COMMIT.

    PostgreSQL runs zq at READ COMMITTED, where every statement takes its own
    snapshot even inside a transaction, so a read-only unit or a single
    statement is exactly as isolated and atomic on its own. SQLite needs its
    BEGIN IMMEDIATE; MariaDB is left as it is.
    """
    return dialect == "postgresql"


def is_retryable(error: exc.DBAPIError) -> bool:
    """Whether a failed transaction lost a race and can simply run again."""
    orig = error.orig
    state = getattr(orig, "sqlstate", None) or getattr(orig, "pgcode", None)
    if state in _PG_RETRY_STATES:
        return True
    args = getattr(orig, "args", ())
    if args and isinstance(args[0], int) and args[0] in _MYSQL_RETRY_CODES:
        return True
    return "database is locked" in str(orig)


def is_unavailable(error: exc.DBAPIError) -> bool:
    """Whether the error means the backend cannot be reached or is failing."""
    return isinstance(error, exc.OperationalError | exc.InterfaceError) or bool(
        error.connection_invalidated
    )


def unreachable(error: exc.DBAPIError, dialect: str) -> StorageUnavailable:
    """What a request is told of an ``is_unavailable`` error: 503, the backend unreachable."""
    return StorageUnavailable(BACKEND_UNREACHABLE, detail=f"{dialect}: {error.orig}")
