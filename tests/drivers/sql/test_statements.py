"""A claim, delete or release costs a handful of statements, whatever the batch.

On PostgreSQL a post, a claim without a dead letter policy and a delete of
several messages are one statement each (WITH queries that also write the
events); SQLite and MariaDB take the general path.
"""

from __future__ import annotations

import uuid
from contextlib import contextmanager

import sqlalchemy as sa

from tests.contract.helpers import claim, post
from zq.poison.dead_letter import DeadLetterPolicy
from zq.storage.delivery_rules import DeliveryRules
from zq.storage.records import ConsumerEntry


@contextmanager
def counting(engine: sa.Engine):
    statements: list[str] = []

    def before(conn, cursor, statement, parameters, context, executemany):
        if not statement.lstrip().upper().startswith(("BEGIN", "SAVEPOINT", "RELEASE")):
            statements.append(statement)

    sa.event.listen(engine, "before_cursor_execute", before)
    try:
        yield statements
    finally:
        sa.event.remove(engine, "before_cursor_execute", before)


def one_statement(storage) -> bool:
    return storage.engine.dialect.name == "postgresql"


def test_post_is_one_statement_on_postgresql(sql_storage):
    project = f"p-{uuid.uuid4().hex}"
    with counting(sql_storage.engine) as posting:
        post(sql_storage, project, "q", 10)
    assert len(posting) == (1 if one_statement(sql_storage) else 3)
    assert len(sql_storage.messages.list(project, "q", limit=20)) == 10


def test_claim_cost_does_not_grow_with_the_batch(sql_storage):
    project = f"p-{uuid.uuid4().hex}"
    post(sql_storage, project, "q", 22)
    with counting(sql_storage.engine) as small:
        claim(sql_storage, project, "q", 2)
    with counting(sql_storage.engine) as large:
        claim(sql_storage, project, "q", 20)
    assert len(small) == len(large) == (1 if one_statement(sql_storage) else 4)


def test_claim_with_its_consumer_record_is_one_statement_on_postgresql(sql_storage):
    """The consumer log's record of a claim rides in the claim's WITH query:
    no BEGIN, no COMMIT, no separate DELETE and INSERT (three round trips)."""
    project = f"p-{uuid.uuid4().hex}"
    post(sql_storage, project, "q", 3)
    rules = DeliveryRules(consumer=ConsumerEntry(client_id="c1", keep_for=3600.0))
    with counting(sql_storage.engine) as claiming:
        made = sql_storage.claims.create(project, "q", ttl=60, grace=30, limit=5,
                                         client_id="c1", rules=rules)
    assert made is not None and len(made.messages) == 3
    assert len(claiming) == (1 if one_statement(sql_storage) else 6)
    assert [c.claim_id for c in sql_storage.consumers.claims(project, "q", expires_after=0)
            ] == [made.id]


def test_claim_with_dead_letter_moves_stays_small(sql_storage):
    project = f"p-{uuid.uuid4().hex}"
    policy = DeadLetterPolicy(max_claim_count=1, queue="dlq")
    post(sql_storage, project, "q", 10)
    first = claim(sql_storage, project, "q", 10, dead_letter=policy)
    sql_storage.claims.release(project, "q", first.id, client_id=None)
    post(sql_storage, project, "q", 10)
    with counting(sql_storage.engine) as statements:
        claimed = claim(sql_storage, project, "q", 10, dead_letter=policy)
    assert len(claimed.messages) == 10
    # select, dlq create, move, select again, insert claim, mark, events.
    assert len(statements) <= 8


def test_delete_and_release_are_a_handful(sql_storage):
    project = f"p-{uuid.uuid4().hex}"
    post(sql_storage, project, "q", 10)
    claimed = claim(sql_storage, project, "q", 10)
    ids = [m.id for m in claimed.messages]
    with counting(sql_storage.engine) as deleting:
        sql_storage.messages.delete(project, "q", ids[0], claim_id=claimed.id, client_id=None)
    with counting(sql_storage.engine) as deleting_many:
        sql_storage.messages.delete_many(project, "q", ids[1:5], claim_ids=[claimed.id],
                                         client_id=None)
    with counting(sql_storage.engine) as releasing:
        sql_storage.claims.release(project, "q", claimed.id, client_id=None)
    assert len(deleting) <= 3
    assert len(deleting_many) == (1 if one_statement(sql_storage) else 3)
    assert len(releasing) <= 4


def test_post_statement_is_one_text_psycopg_caches(sql_storage):
    """A post of any batch size is one statement text, short enough for psycopg
    to cache its parsing (a text per batch size, 215 parameters for 10
    messages, was parsed again on every post: half of a post's CPU)."""
    if not one_statement(sql_storage):
        return
    from psycopg import _queries

    project = f"p-{uuid.uuid4().hex}"
    posted = []
    with counting(sql_storage.engine) as posting:
        for count in (1, 10, 57):
            posted += post(sql_storage, project, "q", count)
    statement, *others = posting
    assert others == [statement, statement]
    assert len(statement.encode()) <= _queries.MAX_CACHED_STATEMENT_LENGTH
    assert statement.count("%(") <= _queries.MAX_CACHED_STATEMENT_PARAMS
    # Markers follow the posting order.
    listed = sql_storage.messages.list(project, "q", limit=100, echo=True)
    assert [m.id for m in listed] == posted
