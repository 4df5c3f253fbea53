"""Message lifecycles reconstructed from events with Spark window functions.

Everything here stays a lazy DataFrame: nothing is collected to the driver.

- ``read_events``: the exported dataset, filtered (partition pruning on the
  ``date`` directories for ``since``/``until``).
- ``message_events``: the events that concern one message, ordered within
  the message by (time, seq), with running and look-ahead columns.
- ``claim_holds``: one row per delivery (a ``claimed`` event) with how it
  ended: ``deleted`` (by that claim), ``released``, ``expired`` (the
  message was claimed again, dead lettered, popped or expired before the
  claim was released or used), ``deleted_unclaimed`` (deleted without the
  claim's id, e.g. a bulk delete), ``rejected`` (the holder rejected it:
  a retry reject, or a terminal reject, the dead letter move with reason
  ``rejected`` and the claim's id) or ``open``.
- ``lifecycles``: one row per message: where it was posted, claims, how it
  ended and when.
"""

from __future__ import annotations

import pyarrow as pa
from pyspark.sql import Column, DataFrame, SparkSession, Window
from pyspark.sql import functions as F
from pyspark.sql.types import (
    BooleanType,
    DateType,
    DoubleType,
    LongType,
    StringType,
    StructField,
    StructType,
)

from zq.analytics.schema import PARTITION_KEY, SCHEMA, event_date
from zq.analytics.selection import EventFilter
from zq.events import (
    CLAIMED,
    DEAD_LETTERED,
    DELETED,
    EXPIRED,
    POSTED,
    REDRIVEN,
    REJECTED,
    RELEASED,
)
from zq.poison.moves import REASON_REJECTED

MESSAGE = ["backend", "project", "message_id"]
ORDER = ["time", "seq"]
# Kinds that move a message along; ``renewed`` changes nothing an analyst
# counts per message and would hide the event that really follows a claim.
# A retry reject ends a delivery as a release does; a redrive moves the
# message back out of its dead letter queue.
_STEPS = (POSTED, CLAIMED, RELEASED, DELETED, DEAD_LETTERED, EXPIRED, REJECTED, REDRIVEN)
# Columns no table reads (the ``--sql`` views keep them). ``cursor`` and
# ``detail`` are the widest columns: dropped before the events are cached
# and shuffled into per-message order, they cost neither memory nor time.
UNUSED_BY_TABLES = ("cursor", "detail", "ttl", "delay", "size", "retry_after", PARTITION_KEY)
# Columns no table reads from the per-message steps: left out before the
# steps are shuffled, sorted and cached (``claim_holds`` computes its ``ts``).
UNUSED_BY_STEPS = ("target", "messages", "description", "shape", "ts")


def read_events(spark: SparkSession, path: str, where: EventFilter | None = None, *,
                every_column: bool = True) -> DataFrame:
    """The exported events at ``path`` with ``where`` applied and a ``ts`` timestamp.

    Without ``every_column``, only the columns the tables read (Parquet then
    reads no others).
    """
    events = spark.read.schema(spark_schema()).parquet(path)
    where = where or EventFilter()
    if where.since is not None:
        events = events.where(F.col("date") >= F.lit(event_date(where.since)).cast("date"))
        events = events.where(F.col("time") >= where.since)
    if where.until is not None:
        events = events.where(F.col("date") <= F.lit(event_date(where.until)).cast("date"))
        events = events.where(F.col("time") < where.until)
    if where.project is not None:
        events = events.where(F.col("project") == where.project)
    if where.queue is not None:
        events = events.where(F.col("queue") == where.queue)
    if not every_column:
        events = events.drop(*UNUSED_BY_TABLES)
    return events.withColumn("ts", F.timestamp_seconds("time"))


def spark_schema() -> StructType:
    """zq.analytics.schema.SCHEMA for Spark, plus the ``date`` partition column.

    Given explicitly so that Spark reads no footers to infer it and an
    empty dataset is an empty DataFrame, not an error.
    """
    types = {pa.string(): StringType(), pa.int64(): LongType(),
             pa.float64(): DoubleType(), pa.bool_(): BooleanType()}
    fields = [StructField(f.name, types[f.type], True) for f in SCHEMA]
    return StructType([*fields, StructField(PARTITION_KEY, DateType(), True)])


def is_kind(kind: str) -> Column:
    return F.col("kind") == kind


def message_events(events: DataFrame) -> DataFrame:
    """Per-message events with window columns.

    ``posted_at`` and ``message_fingerprint`` (from the ``posted`` event),
    ``claims_so_far`` (claimed events up to and including this one),
    ``claims_at`` (claims counted when a message is deleted or dead lettered:
    the event's claim_count, else the running count, plus one for a pop),
    and ``next_kind``/``next_claim_id``/``next_pop``/``next_reason`` (the
    following step; ``next_kind`` is null exactly on a message's last step,
    as every step has a kind).
    """
    ordered = Window.partitionBy(*MESSAGE).orderBy(*ORDER)
    # The whole message, but in the same order as the running columns: Spark
    # then computes every column in one Window operator over one sort by
    # (message, time, seq); an unordered window needed a sort of its own.
    whole = ordered.rowsBetween(Window.unboundedPreceding, Window.unboundedFollowing)
    running = ordered.rowsBetween(Window.unboundedPreceding, Window.currentRow)
    steps = events.where(F.col("message_id").isNotNull() & F.col("kind").isin(*_STEPS))
    pop = F.coalesce(F.col("pop"), F.lit(False))
    return (
        steps.withColumn("posted_at", F.min(F.when(is_kind(POSTED), F.col("time"))).over(whole))
        .withColumn(
            "message_fingerprint",
            F.max(F.when(is_kind(POSTED), F.col("fingerprint"))).over(whole),
        )
        .withColumn("claims_so_far", F.count(F.when(is_kind(CLAIMED), 1)).over(running))
        .withColumn(
            "claims_at",
            F.coalesce(
                F.col("claim_count"),
                F.col("claims_so_far") + F.when(is_kind(DELETED) & pop, 1).otherwise(0),
            ),
        )
        .withColumn("next_kind", F.lead("kind").over(ordered))
        .withColumn("next_claim_id", F.lead("claim_id").over(ordered))
        .withColumn("next_pop", F.lead(pop).over(ordered))
        .withColumn("next_reason", F.lead("reason").over(ordered))
    )


def ended_by() -> Column:
    """How the delivery of a ``claimed`` step ended, from the step after it."""
    next_kind = F.col("next_kind")
    same_claim = F.col("next_claim_id") == F.col("claim_id")
    return (
        F.when(next_kind.isNull(), "open")
        .when(next_kind == RELEASED, "released")
        .when(next_kind == REJECTED, "rejected")
        .when((next_kind == DEAD_LETTERED) & (F.col("next_reason") == REASON_REJECTED)
              & same_claim, "rejected")
        .when(
            (next_kind == DELETED) & ~F.col("next_pop")
            & (F.col("next_claim_id") == F.col("claim_id")),
            "deleted",
        )
        .when((next_kind == DELETED) & ~F.col("next_pop"), "deleted_unclaimed")
        # Claimed again, dead lettered, popped or expired while this claim
        # never released nor deleted it: the claim ran out.
        .otherwise("expired")
    )


def claim_holds(steps: DataFrame) -> DataFrame:
    """One row per delivery of a message to a claim, with ``ended_by``."""
    return steps.where(is_kind(CLAIMED)).select(
        "backend", "project", "queue", "message_id", "claim_id", "client_id",
        "time", F.timestamp_seconds("time").alias("ts"), F.col("claims_so_far").alias("delivery"),
        ended_by().alias("ended_by"),
    )


def explicit_claim_expiries(events: DataFrame) -> DataFrame:
    """The garbage collector's ``expired`` events for whole claims."""
    return events.where(
        is_kind(EXPIRED) & F.col("message_id").isNull() & (F.col("target") == "claim")
    )


def lifecycles(steps: DataFrame) -> DataFrame:
    """One row per message: origin queue, claims, outcome and its times."""

    def first(kind: str, *fields: str) -> Column:
        # The earliest event of this kind, as a struct ordered by time.
        return F.min(F.when(is_kind(kind), F.struct(*ORDER, *fields)))

    summary = steps.groupBy(*MESSAGE).agg(
        F.min(F.struct(*ORDER, "queue")).getField("queue").alias("queue"),
        F.first("posted_at").alias("posted_at"),
        F.first("message_fingerprint").alias("fingerprint"),
        F.count(F.when(is_kind(CLAIMED), 1)).alias("claims"),
        first(DEAD_LETTERED, "to_queue", "claims_at").alias("_dl"),
        F.count(F.when(is_kind(DEAD_LETTERED), 1)).alias("dead_letters"),
        first(DELETED, "queue", "claims_at", "pop").alias("_del"),
        first(EXPIRED, "queue").alias("_exp"),
        F.max(F.struct(*ORDER, "queue", "kind")).alias("_last"),
    )
    outcome = (
        F.when(F.col("_del").isNotNull(), DELETED)
        .when(F.col("_exp").isNotNull(), EXPIRED)
        .when(F.col("_dl").isNotNull(), DEAD_LETTERED)
        .otherwise("open")
    )
    return summary.select(
        *MESSAGE,
        "queue",
        "fingerprint",
        "posted_at",
        "claims",
        "dead_letters",
        outcome.alias("outcome"),
        F.col("_last.queue").alias("last_queue"),
        F.col("_dl.time").alias("dead_lettered_at"),
        F.col("_dl.to_queue").alias("dead_letter_queue"),
        F.col("_dl.claims_at").alias("claims_at_dead_letter"),
        F.col("_del.time").alias("deleted_at"),
        F.col("_del.claims_at").alias("claims_at_delete"),
        F.coalesce(F.col("_del.pop"), F.lit(False)).alias("popped"),
        F.col("_exp.time").alias("expired_at"),
        (F.col("_del.time") - F.col("posted_at")).alias("post_to_delete"),
        (F.col("_dl.time") - F.col("posted_at")).alias("post_to_dead_letter"),
    )
