"""Spark reductions for the retry-policy advisor and the poison signatures.

The advisor needs, per queue, three small things (see zq.analytics.advice):

- ``attempt_counts``: messages that succeeded (deleted; a pop counts as a
  claim) or failed (dead lettered, or expired after at least one claim)
  after how many claims in that queue. A message that never ended in the
  queue (still there when the export ran) is left out.
- ``attempt_gaps``: seconds between consecutive claims of one message in
  the queue: count, mean, exact p50 and p90.
- ``recoveries``: for each message that succeeded after two or more claims,
  the seconds from its first attempt to the attempt that succeeded; a list
  per queue (one number per recovered message).

``poison_signatures`` groups the messages that failed (dead lettered or
rejected) by project and by body shape or description; ``signature_messages``
lists every one of those messages per signature (the drill-down).
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from zq import events
from zq.analytics.lifecycles import MESSAGE, ORDER, is_kind

SAMPLE_IDS = 5
_PER = [*MESSAGE, "queue"]
_QUEUE = ["project", "queue"]


def per_message(steps: DataFrame) -> DataFrame:
    """One row per message and queue it ended in: ``outcome``, ``claims``, ``recovery``.

    Claims are counted in the queue, up to the end (a pop is one more), not
    taken from the event's ``claim_count``: that count goes on in a dead
    letter queue, where the message was not attempted yet.
    """
    running = Window.partitionBy(*_PER).orderBy(*ORDER).rowsBetween(
        Window.unboundedPreceding, Window.currentRow)
    claim_time = F.when(is_kind(events.CLAIMED), F.col("time"))
    ends = (steps
            .withColumn("queue_claims", F.count(claim_time).over(running))
            .withColumn("first_claim", F.min(claim_time).over(running))
            .withColumn("last_claim", F.max(claim_time).over(running))
            .where(F.col("kind").isin(events.DELETED, events.DEAD_LETTERED, events.EXPIRED))
            .groupBy(*_PER)
            .agg(F.min(F.struct(*ORDER, "kind", "pop", "queue_claims", "first_claim",
                                "last_claim")).alias("end")))
    kind = F.col("end.kind")
    popped = F.coalesce(F.col("end.pop"), F.lit(False)) & (kind == events.DELETED)
    claims = F.col("end.queue_claims") + F.when(popped, 1).otherwise(0)
    outcome = (F.when(kind == events.DELETED, "succeeded")
               .when((kind == events.DEAD_LETTERED) | (claims >= 1), "failed"))
    succeeded_at = F.when(popped, F.col("end.time")).otherwise(F.col("end.last_claim"))
    first_attempt = F.coalesce(F.col("end.first_claim"), F.col("end.time"))
    recovery = F.when((outcome == "succeeded") & (claims >= 2), succeeded_at - first_attempt)
    return (ends.select(*_PER, outcome.alias("outcome"), claims.alias("claims"),
                        recovery.alias("recovery"))
            .where(F.col("outcome").isNotNull()))


def attempt_counts(messages: DataFrame) -> DataFrame:
    return (messages.groupBy(*_QUEUE, "outcome", "claims")
            .agg(F.count(F.lit(1)).alias("messages")).orderBy(*_QUEUE, "outcome", "claims"))


def attempt_gaps(steps: DataFrame) -> DataFrame:
    ordered = Window.partitionBy(*_PER).orderBy(*ORDER)
    gaps = (steps.where(is_kind(events.CLAIMED))
            .withColumn("gap", F.col("time") - F.lag("time").over(ordered))
            .where(F.col("gap").isNotNull()))
    return (gaps.groupBy(*_QUEUE).agg(
        F.count(F.lit(1)).alias("gaps"), F.mean("gap").alias("gap_mean"),
        F.percentile("gap", F.lit(0.5)).alias("gap_p50"),
        F.percentile("gap", F.lit(0.9)).alias("gap_p90")).orderBy(*_QUEUE))


def recoveries(messages: DataFrame) -> DataFrame:
    return (messages.where(F.col("recovery").isNotNull()).groupBy(*_QUEUE)
            .agg(F.array_sort(F.collect_list("recovery")).alias("recoveries"))
            .orderBy(*_QUEUE))


def signature_id() -> Column:
    """12 hex digits of sha256("project\nby:signature"): a short, stable name for a signature.

    The project is part of it, so that one id is one row of
    ``poison_signatures`` and its drill-down lists that project's messages
    only; a line feed, which project ids may not contain, ends the project.
    """
    text = F.concat(F.col("project"), F.lit("\n"), F.col("by"), F.lit(":"), F.col("signature"))
    return F.substring(F.sha2(text, 256), 1, 12)


def _failing_messages(log: DataFrame) -> DataFrame:
    """One row per signature and failing message: its failures' count, times and queues."""
    failing = log.where(F.col("kind").isin(events.DEAD_LETTERED, events.REJECTED)
                           & F.col("message_id").isNotNull())
    keyed = failing.where(F.col("shape").isNotNull()).select(
        F.lit("shape").alias("by"), F.col("shape").alias("signature"), *MESSAGE, "queue",
        *ORDER,
    ).unionByName(failing.where(F.col("description").isNotNull()).select(
        F.lit("description").alias("by"), F.col("description").alias("signature"), *MESSAGE,
        "queue", *ORDER,
    ))
    return keyed.groupBy("by", "signature", *MESSAGE).agg(
        F.count(F.lit(1)).alias("events"),
        F.min(F.struct(*ORDER)).alias("first"), F.max("time").alias("last"),
        F.collect_set("queue").alias("queues"))


_ISO = "yyyy-MM-dd'T'HH:mm:ss'Z'"


def _iso(column: Column) -> Column:
    return F.date_format(F.timestamp_seconds(column), _ISO)


def poison_signatures(log: DataFrame, top: int = 20) -> DataFrame:
    """Failing messages per project grouped by body shape and by description, most first."""
    earliest = F.array_sort(F.collect_list(F.struct("first", "message_id")))
    return (
        _failing_messages(log).groupBy("project", "by", "signature").agg(
            F.count(F.lit(1)).alias("messages"), F.sum("events").alias("events"),
            F.min("first.time").alias("_first"), F.max("last").alias("_last"),
            F.array_join(F.array_sort(F.array_distinct(F.flatten(F.collect_list("queues")))),
                         ",").alias("queues"),
            F.array_join(F.slice(earliest, 1, SAMPLE_IDS).getField("message_id"), ",")
            .alias("sample_ids"))
        .select(signature_id().alias("signature_id"), "project", "by", "signature", "messages",
                "events", _iso("_first").alias("first"), _iso("_last").alias("last"),
                "queues", "sample_ids")
        .orderBy(F.desc("messages"), F.desc("events"), "project", "by", "signature")
        .limit(top))


def signature_messages(log: DataFrame) -> DataFrame:
    """The drill-down: every failing message of every signature, earliest failure first."""
    return (
        _failing_messages(log)
        .select(signature_id().alias("signature_id"), "by", *MESSAGE,
                F.array_join(F.array_sort("queues"), ",").alias("queues"), "events",
                _iso("first.time").alias("first"), _iso("last").alias("last"),
                F.col("first").alias("_at"))
        .orderBy("signature_id", "_at", *MESSAGE)
        .drop("_at"))
