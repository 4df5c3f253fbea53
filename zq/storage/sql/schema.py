"""The driver's tables (SQLAlchemy Core); migrations/ creates them.

Times are POSIX seconds as double precision. JSON (queue metadata, message
history, event detail) is stored as text: the driver never queries inside
it, and text behaves the same on every dialect.
"""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.dialects import mysql

from zq.storage.records import LEGACY_VERSION

metadata = sa.MetaData()


def name_type(length: int) -> sa.types.TypeEngine[str]:
    """A short identifier compared byte by byte on every dialect.

    Queue names are case-sensitive and listed in byte order, so PostgreSQL
    uses the "C" collation and MySQL/MariaDB a binary one.
    """
    return (
        sa.String(length)
        .with_variant(sa.String(length, collation="C"), "postgresql")
        .with_variant(
            mysql.VARCHAR(length, charset="utf8mb4", collation="utf8mb4_bin"),
            "mysql",
            "mariadb",
        )
    )


def long_text() -> sa.types.TypeEngine[str]:
    """Text up to megabytes (MySQL's TEXT stops at 64 KiB)."""
    return sa.Text().with_variant(mysql.MEDIUMTEXT(), "mysql", "mariadb")


# An integer primary key that SQLite makes its rowid.
big_id = sa.BigInteger().with_variant(sa.Integer(), "sqlite")

PROJECT = 256
QUEUE = 64
ID = 36
CLIENT = 256
VERSION = 32

queues = sa.Table(
    "queues",
    metadata,
    sa.Column("project", name_type(PROJECT), primary_key=True),
    sa.Column("name", name_type(QUEUE), primary_key=True),
    sa.Column("metadata", long_text(), nullable=False),
    sa.Column("created", sa.Double(), nullable=False),
    # MetadataRead.version: a new random value with every metadata write
    # and creation, so it never comes back.
    sa.Column("metadata_version", sa.String(VERSION), nullable=False,
              server_default=LEGACY_VERSION),
)

# The links version of each project that ever changed a link (a missing
# row is version 0); QueueController in zq/storage/base.py.
links = sa.Table(
    "links",
    metadata,
    sa.Column("project", name_type(PROJECT), primary_key=True),
    sa.Column("version", sa.BigInteger(), nullable=False),
)

messages = sa.Table(
    "messages",
    metadata,
    # Queue order; AUTOINCREMENT so SQLite never reuses a deleted marker.
    sa.Column("marker", big_id, primary_key=True, autoincrement=True),
    sa.Column("id", name_type(ID), nullable=False, unique=True),
    sa.Column("project", name_type(PROJECT), nullable=False),
    sa.Column("queue", name_type(QUEUE), nullable=False),
    sa.Column("body", long_text(), nullable=False),
    sa.Column("fingerprint", sa.String(64), nullable=False),
    sa.Column("ttl", sa.Integer(), nullable=False),
    sa.Column("created", sa.Double(), nullable=False),
    sa.Column("expires", sa.Double(), nullable=False),
    sa.Column("delay_until", sa.Double(), nullable=False),
    sa.Column("client_id", sa.String(CLIENT), nullable=True),
    sa.Column("claim_id", name_type(ID), nullable=True),
    sa.Column("claim_expires", sa.Double(), nullable=True),
    sa.Column("claim_count", sa.Integer(), nullable=False, server_default="0"),
    sa.Column("history", long_text(), nullable=False),
    sa.Column("redrive_count", sa.Integer(), nullable=False, server_default="0"),
    # The breaker and blame split (migration 0011): deliveries not charged
    # to the message, its last failure's description, and the JSON list of
    # the distinct Client-IDs its claims lapsed with (NULL: none).
    sa.Column("forgiven_count", sa.Integer(), nullable=False, server_default="0"),
    sa.Column("last_failure", sa.String(200), nullable=True),
    sa.Column("lapsed_with", sa.String(1024), nullable=True),
    sa.Index("ix_messages_queue_marker", "project", "queue", "marker"),
    sa.Index("ix_messages_expires", "expires"),
    sa.Index("ix_messages_claim_id", "claim_id"),
    sqlite_autoincrement=True,
)

claims = sa.Table(
    "claims",
    metadata,
    sa.Column("id", name_type(ID), primary_key=True),
    sa.Column("project", name_type(PROJECT), nullable=False),
    sa.Column("queue", name_type(QUEUE), nullable=False),
    sa.Column("ttl", sa.Integer(), nullable=False),
    sa.Column("grace", sa.Integer(), nullable=False),
    sa.Column("created", sa.Double(), nullable=False),
    sa.Column("expires", sa.Double(), nullable=False),
    sa.Column("client_id", sa.String(CLIENT), nullable=True),
    sa.Index("ix_claims_queue", "project", "queue"),
    sa.Index("ix_claims_expires", "expires"),
)

# The consumer log (ConsumerLog in zq/storage/base.py): one row per claim,
# kept a while after it ends so lapsed claims can be told apart.
consumer_claims = sa.Table(
    "consumer_claims",
    metadata,
    sa.Column("claim_id", name_type(ID), primary_key=True),
    sa.Column("project", name_type(PROJECT), nullable=False),
    sa.Column("queue", name_type(QUEUE), nullable=False),
    sa.Column("client_id", sa.String(CLIENT), nullable=False),
    sa.Column("ttl", sa.Integer(), nullable=False),
    sa.Column("claimed", sa.Double(), nullable=False),
    sa.Column("expires", sa.Double(), nullable=False),
    sa.Column("settled", sa.Double(), nullable=True),
    sa.Index("ix_consumer_claims_queue_expires", "project", "queue", "expires"),
)

# Each queue's breaker (zq.storage.breakers; migration 0011): its state and
# the probe in flight. A missing row is a closed breaker that saw nothing.
breakers = sa.Table(
    "breakers",
    metadata,
    sa.Column("project", name_type(PROJECT), primary_key=True),
    sa.Column("queue", name_type(QUEUE), primary_key=True),
    sa.Column("state", sa.String(16), nullable=False),
    sa.Column("since", sa.Double(), nullable=False),
    sa.Column("description", sa.String(200), nullable=True),
    sa.Column("tripped_at", sa.Double(), nullable=True),
    sa.Column("closed_at", sa.Double(), nullable=True),
    sa.Column("redrive_due", sa.Boolean(), nullable=False),
    sa.Column("next_probe", sa.Double(), nullable=True),
    sa.Column("probe_claim_id", name_type(ID), nullable=True),
    sa.Column("probe_successes", sa.Integer(), nullable=False),
)

# The outcomes of each breaker's window: a failure has its message id (and
# description), a success none. Trimmed by the steps that write them.
breaker_outcomes = sa.Table(
    "breaker_outcomes",
    metadata,
    sa.Column("seq", big_id, primary_key=True, autoincrement=True),
    sa.Column("project", name_type(PROJECT), nullable=False),
    sa.Column("queue", name_type(QUEUE), nullable=False),
    sa.Column("time", sa.Double(), nullable=False),
    sa.Column("message_id", name_type(ID), nullable=True),
    sa.Column("description", sa.String(200), nullable=True),
    sa.Index("ix_breaker_outcomes_queue_time", "project", "queue", "time"),
)

events = sa.Table(
    "events",
    metadata,
    # The cursor; AUTOINCREMENT so SQLite never reuses a trimmed one.
    sa.Column("seq", big_id, primary_key=True, autoincrement=True),
    sa.Column("time", sa.Double(), nullable=False),
    sa.Column("project", name_type(PROJECT), nullable=False),
    sa.Column("queue", name_type(QUEUE), nullable=False),
    sa.Column("kind", sa.String(32), nullable=False),
    sa.Column("message_id", name_type(ID), nullable=True),
    sa.Column("claim_id", name_type(ID), nullable=True),
    sa.Column("client_id", sa.String(CLIENT), nullable=True),
    sa.Column("claim_count", sa.Integer(), nullable=True),
    sa.Column("detail", long_text(), nullable=False),
    sqlite_autoincrement=True,
)

# What only PostgreSQL has, outside ``metadata`` (which every dialect
# shares): the transaction id of each event (migration 0004, read by
# zq/storage/sql/commit_order.py).
POSTGRESQL_ONLY_COLUMNS = {("events", "xid")}
POSTGRESQL_ONLY_INDEXES = {"ix_events_xid_seq"}
# The claim's two partial indexes (migrations 0009_claim_plans and
# 0010_claimable_again, read by zq/storage/sql/postgresql.py's claim).
POSTGRESQL_ONLY_INDEXES |= {"ix_messages_free_marker", "ix_messages_claimable_again"}

# Where each subscription's notifications have got to, and who delivers
# them (zq/storage/sql/cursors.py; migration 0008).
notification_cursors = sa.Table(
    "notification_cursors",
    metadata,
    sa.Column("id", sa.String(64), primary_key=True),  # the subscription id
    sa.Column("cursor", sa.String(64), nullable=True),  # the last event handled
    sa.Column("owner", sa.String(128), nullable=False),  # the lease holder
    sa.Column("lease_until", sa.Double(), nullable=False),
)

# Subscriptions (SubscriptionController). ``subscriber_key`` is the
# SHA-256 of the subscriber: unique per queue, where the subscriber itself
# (a URL of any length) is too long for a unique index on MariaDB.
subscriptions = sa.Table(
    "subscriptions",
    metadata,
    sa.Column("id", name_type(ID), primary_key=True),
    sa.Column("project", name_type(PROJECT), nullable=False),
    sa.Column("queue", name_type(QUEUE), nullable=False),
    sa.Column("subscriber", sa.Text(), nullable=False),
    sa.Column("subscriber_key", sa.String(64), nullable=False),
    sa.Column("ttl", sa.Integer(), nullable=False),
    sa.Column("created", sa.Double(), nullable=False),
    sa.Column("expires", sa.Double(), nullable=False),
    sa.Column("options", long_text(), nullable=False),
    sa.Column("confirmed", sa.Boolean(), nullable=False),
    sa.UniqueConstraint("project", "queue", "subscriber_key", name="uq_subscriptions_subscriber"),
    sa.Index("ix_subscriptions_expires", "expires"),
)
