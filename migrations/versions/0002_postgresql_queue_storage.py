"""PostgreSQL: storage parameters for queue churn on messages, claims, events.

A queue table is written at its head and deleted at its tail all the time:
the default autovacuum trigger (20% of the table dead) lets dead rows pile
up at the head of the queue, where every claim walks. These settings vacuum
after a fixed number of dead rows, without cost-based sleeping. SQLite and
MariaDB/MySQL have no such parameters; the migration changes nothing there.

Revision ID: 0002
Revises: 0001
Create Date: 2026-11-22
"""

from __future__ import annotations

from alembic import op

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

# table -> storage parameters (ALTER TABLE ... SET (...)).
PARAMETERS = {
    "messages": {
        "autovacuum_vacuum_scale_factor": "0",
        "autovacuum_vacuum_threshold": "5000",
        "autovacuum_vacuum_cost_delay": "0",
        "autovacuum_analyze_scale_factor": "0.02",
    },
    "claims": {
        "autovacuum_vacuum_scale_factor": "0",
        "autovacuum_vacuum_threshold": "1000",
        "autovacuum_vacuum_cost_delay": "0",
    },
    "events": {
        "autovacuum_vacuum_scale_factor": "0",
        "autovacuum_vacuum_threshold": "10000",
        "autovacuum_vacuum_insert_scale_factor": "0.05",
        "autovacuum_vacuum_cost_delay": "0",
    },
}


def _postgresql() -> bool:
    return op.get_bind().dialect.name == "postgresql"


def upgrade() -> None:
    if not _postgresql():
        return
    for table, parameters in PARAMETERS.items():
        settings = ", ".join(f"{name} = {value}" for name, value in parameters.items())
        op.execute(f"ALTER TABLE {table} SET ({settings})")


def downgrade() -> None:
    if not _postgresql():
        return
    for table, parameters in PARAMETERS.items():
        op.execute(f"ALTER TABLE {table} RESET ({', '.join(parameters)})")
