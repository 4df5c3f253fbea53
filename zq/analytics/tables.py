"""The computed tables: each a lazy Spark DataFrame answering one analyst question.

Definitions (the tests recount every one of them in plain Python):

- ``queue_totals`` / ``queue_trend``: events per queue (and time bucket,
  see zq.analytics.buckets: its width adapts to the events' time range) by
  kind. ``expired`` counts expired *messages*; a dead lettered message
  counts in its source queue (``dead_lettered``) and in its dead letter
  queue (``dead_lettered_in``); ``purged`` is the messages purges and queue
  deletes removed (each ``purged`` event carries its count);
  ``dead_letter_rate`` is dead_lettered / (deleted + dead_lettered), the
  share of finished messages that failed. ``queue_totals`` also balances
  each queue: ``present`` is the messages still there (their last event
  left them in the queue and no purge of it came later), and
  ``unaccounted`` = posted + dead_lettered_in - deleted - dead_lettered -
  expired - purged - present, 0 when every message is accounted for (a
  ``--since``/``--until`` window that cuts lifecycles makes it non-zero).
- ``claims_distribution``: how many claims a message had when it was
  deleted (pops count as a claim) or dead lettered, per queue.
- ``latency``: seconds from the original post to delete
  (``post_to_delete``, in the queue that deleted it) and to dead letter
  (``post_to_dead_letter``, in the source queue): exact p50/p95/p99 (linear
  interpolation) and max. Messages posted before ``--since`` are left out.
- ``failing_fingerprints``: per project, body fingerprints by dead letter
  moves, with the earliest sample body.
- ``poison_signatures``: per project, messages that failed (dead lettered
  or rejected) grouped by body shape and by description
  (``zq.analytics.attempts``).

Every table that names a queue names its project: queue names are a
project's own, and two tenants' ``orders`` are different queues.
- ``consumers``: per Client-ID, deliveries and how they ended (see
  ``lifecycles.claim_holds``), and ``expired_claims``: distinct claims that
  ran out, inferred or reported by the garbage collector.
- ``dead_letter_rate``: the rate over all selected queues, per time bucket.
- ``rejections``, ``dead_letters_by_reason``, ``redrive_outcomes``: the
  poison workflow (``zq.analytics.redrives``).

The flows count ``rejected`` (retry rejects: the message stays), and the
redrives out of a dead letter queue (``redriven``) and into the queue they
went to (``redriven_in``); the balance is posted + dead_lettered_in +
redriven_in = deleted + dead_lettered + redriven + expired + purged + present.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame
from pyspark.sql import functions as F

from zq.analytics.attempts import poison_signatures
from zq.analytics.lifecycles import ORDER, explicit_claim_expiries, is_kind
from zq.analytics.redrives import dead_letters_by_reason, redrive_outcomes, rejections
from zq.events import (
    CLAIMED,
    DEAD_LETTERED,
    DELETED,
    EXPIRED,
    POSTED,
    PURGED,
    REDRIVEN,
    REJECTED,
    RELEASED,
)

QUEUE = ["project", "queue"]


def _count(condition: Column) -> Column:
    return F.count(F.when(condition, 1))


def _rate(failed: str, succeeded: str) -> Column:
    finished = F.col(failed) + F.col(succeeded)
    return F.when(finished > 0, F.col(failed) / finished)


def _kind_counts() -> list[Column]:
    return [
        _count(is_kind(POSTED)).alias("posted"),
        _count(is_kind(CLAIMED)).alias("claimed"),
        _count(is_kind(RELEASED)).alias("released"),
        _count(is_kind(REJECTED)).alias("rejected"),
        _count(is_kind(DELETED)).alias("deleted"),
        _count(is_kind(DEAD_LETTERED)).alias("dead_lettered"),
        _count(is_kind(REDRIVEN)).alias("redriven"),
        _count(is_kind(EXPIRED) & F.col("message_id").isNotNull()).alias("expired"),
        F.sum(F.when(is_kind(PURGED), F.coalesce(F.col("messages"), F.lit(0)))
              .otherwise(0)).alias("purged"),
    ]


# The flow columns, in the order the tables show them.
_FLOWS = ["posted", "dead_lettered_in", "redriven_in", "claimed", "released", "rejected",
          "deleted", "dead_lettered", "redriven", "expired", "purged"]


def bucket_start(width: int) -> Column:
    """The start of the time bucket of each event, in POSIX seconds."""
    return F.floor(F.col("time") / F.lit(float(width))) * F.lit(width)


def bucket_label(start: Column) -> Column:
    """A bucket's start as zq.analytics.buckets labels it.

    One label per start and back, so the tables group by the number and
    format only the groups, not every event.
    """
    return F.date_format(F.timestamp_seconds(start), "yyyy-MM-dd'T'HH:mm:ss'Z'")


def _arrivals(events: DataFrame, *keys: Column) -> DataFrame:
    """Dead letter moves and redrives counted in the queue they went to."""
    return (
        events.where(F.col("kind").isin(DEAD_LETTERED, REDRIVEN))
        .groupBy(*keys, "project", F.col("to_queue").alias("queue"))
        .agg(_count(is_kind(DEAD_LETTERED)).alias("dead_lettered_in"),
             _count(is_kind(REDRIVEN)).alias("redriven_in"))
    )


_COUNTED = [column for column in _FLOWS if column not in ("dead_lettered_in", "redriven_in")]
_ARRIVED = ["dead_lettered_in", "redriven_in"]


def flows_by_bucket(events: DataFrame, width: int) -> tuple[DataFrame, DataFrame]:
    """The flow counts and the arrivals per bucket start (``bucket``) and queue.

    Cached (they are small): ``queue_totals``, ``queue_trend`` and
    ``dead_letter_rate`` are sums of them, so the events are scanned for
    the three tables once instead of five times.
    """
    start = bucket_start(width).alias("bucket")
    counts = events.groupBy(start, *QUEUE).agg(*_kind_counts()).cache()
    return counts, _arrivals(events, start).cache()


def _summed(frame: DataFrame, keys: list[str], columns: list[str]) -> DataFrame:
    # Counts are integers: summing the buckets' counts gives the whole
    # range's exactly (groups whose key is null stay one group, as before).
    return frame.groupBy(*keys).agg(*[F.sum(column).alias(column) for column in columns])


def present(steps: DataFrame, events: DataFrame) -> DataFrame:
    """Per queue, the messages still in it when the selected events end.

    A message is in the queue its last step left it in (posted, claimed or
    released or rejected there, or moved there by a dead letter move or a
    redrive) unless that step
    was a delete or an expiry, or a purge of that queue came after it.
    """
    moved = F.col("kind").isin(DEAD_LETTERED, REDRIVEN)
    # A message's last step is the row of its window without a next step:
    # no grouping (and no sort) of every step by message is needed for it.
    held = (
        steps.where(F.col("next_kind").isNull() & ~F.col("kind").isin(DELETED, EXPIRED))
        .select("backend", "project",
                F.when(moved, F.col("to_queue")).otherwise(F.col("queue")).alias("queue"),
                F.struct(*ORDER).alias("at"))
    )
    purges = (
        events.where(is_kind(PURGED))
        .groupBy("backend", *QUEUE).agg(F.max(F.struct(*ORDER)).alias("purge"))
    )
    return (
        held.join(purges, ["backend", *QUEUE], "left")
        .where(F.col("purge").isNull() | (F.col("at") > F.col("purge")))
        .groupBy(*QUEUE).agg(F.count(F.lit(1)).alias("present"))
    )


def queue_totals(counts: DataFrame, arrivals: DataFrame, steps: DataFrame,
                 events: DataFrame) -> DataFrame:
    """Per queue; ``counts`` and ``arrivals`` come from ``flows_by_bucket``."""
    totals = (
        _summed(counts, QUEUE, _COUNTED)
        .join(_summed(arrivals, QUEUE, _ARRIVED), QUEUE, "full_outer")
        .join(present(steps, events), QUEUE, "full_outer")
        .fillna(0, subset=[*_FLOWS, "present"])
    )
    out = (F.col("deleted") + F.col("dead_lettered") + F.col("redriven") + F.col("expired")
           + F.col("purged") + F.col("present"))
    into = F.col("posted") + F.col("dead_lettered_in") + F.col("redriven_in")
    return (
        totals.select(*QUEUE, *_FLOWS, "present", (into - out).alias("unaccounted"))
        .withColumn("dead_letter_rate", _rate("dead_lettered", "deleted"))
        .orderBy(F.desc("dead_lettered"), *QUEUE)
    )


def queue_trend(counts: DataFrame, arrivals: DataFrame, width: int) -> DataFrame:
    return (
        counts.join(arrivals, ["bucket", *QUEUE], "full_outer")
        .fillna(0, subset=_FLOWS)
        .select(bucket_label(F.col("bucket")).alias("bucket"),
                F.lit(width).alias("bucket_seconds"), *QUEUE, *_FLOWS)
        .withColumn("dead_letter_rate", _rate("dead_lettered", "deleted"))
        .orderBy("bucket", *QUEUE)
    )


def claims_distribution(steps: DataFrame) -> DataFrame:
    return (
        steps.where(F.col("kind").isin(DELETED, DEAD_LETTERED))
        .groupBy(*QUEUE, F.col("kind").alias("outcome"), F.col("claims_at").alias("claims"))
        .agg(F.count(F.lit(1)).alias("messages"))
        .orderBy(*QUEUE, "outcome", "claims")
    )


def latency(steps: DataFrame) -> DataFrame:
    metric = F.when(is_kind(DELETED), "post_to_delete").otherwise("post_to_dead_letter")
    seconds = F.col("time") - F.col("posted_at")
    return (
        steps.where(F.col("kind").isin(DELETED, DEAD_LETTERED))
        .where(F.col("posted_at").isNotNull())
        .select(*QUEUE, metric.alias("metric"), seconds.alias("seconds"))
        .groupBy(*QUEUE, "metric")
        .agg(
            F.count(F.lit(1)).alias("messages"),
            F.percentile("seconds", F.lit(0.5)).alias("p50"),
            F.percentile("seconds", F.lit(0.95)).alias("p95"),
            F.percentile("seconds", F.lit(0.99)).alias("p99"),
            F.max("seconds").alias("max"),
        )
        .orderBy(*QUEUE, "metric")
    )


def failing_fingerprints(steps: DataFrame, top: int = 20) -> DataFrame:
    moves = steps.where(is_kind(DEAD_LETTERED)).withColumn(
        "fp", F.coalesce(F.col("fingerprint"), F.col("message_fingerprint"))
    )
    earliest_sample = F.min(F.when(F.col("sample").isNotNull(), F.struct("time", "seq", "sample")))
    return (
        moves.groupBy("project", F.col("fp").alias("fingerprint"))
        .agg(
            F.count(F.lit(1)).alias("dead_letters"),
            F.countDistinct("backend", "project", "message_id").alias("messages"),
            F.array_join(F.array_sort(F.collect_set("queue")), ",").alias("queues"),
            earliest_sample.getField("sample").alias("sample"),
        )
        .orderBy(F.desc("dead_letters"), "project", "fingerprint")
        .limit(top)
    )


def _client(column: str = "client_id") -> Column:
    return F.coalesce(F.col(column), F.lit("(none)")).alias("client_id")


def consumers(holds: DataFrame, events: DataFrame, top: int = 20) -> DataFrame:
    ended = F.col("ended_by")
    per_client = holds.groupBy(_client()).agg(
        F.count(F.lit(1)).alias("deliveries"),
        F.countDistinct("claim_id").alias("claims"),
        _count(ended == "deleted").alias("deleted"),
        _count(ended == "released").alias("released"),
        _count(ended == "rejected").alias("rejected"),
        _count(ended == "expired").alias("expired"),
    )
    expired_claims = (
        holds.where(ended == "expired").select(_client(), "claim_id")
        .unionByName(explicit_claim_expiries(events).select(_client(), "claim_id"))
        .groupBy("client_id").agg(F.countDistinct("claim_id").alias("expired_claims"))
    )
    counts = ["deliveries", "claims", "deleted", "released", "rejected", "expired",
              "expired_claims"]
    failed = F.col("expired") + F.col("released") + F.col("rejected")
    return (
        per_client.join(expired_claims, "client_id", "full_outer")
        .fillna(0, subset=counts)
        .orderBy(F.desc(failed), F.desc("expired_claims"),
                 "client_id")
        .limit(top)
    )


def dead_letter_rate(counts: DataFrame, width: int) -> DataFrame:
    return (
        _summed(counts, ["bucket"], ["deleted", "dead_lettered"])
        .select(bucket_label(F.col("bucket")).alias("bucket"),
                F.lit(width).alias("bucket_seconds"), "deleted", "dead_lettered")
        .withColumn("dead_letter_rate", _rate("dead_lettered", "deleted"))
        .orderBy("bucket")
    )


def time_range(events: DataFrame) -> tuple[float | None, float | None]:
    """The first and last event time of the selection (for the bucket width)."""
    first, last = events.agg(F.min("time"), F.max("time")).first()
    return first, last


def compute(events: DataFrame, steps: DataFrame, holds: DataFrame, *, top: int = 20,
            bucket: int = 86400) -> dict[str, DataFrame]:
    """Every table, by name (in zq.analytics.report.TABLE_NAMES order)."""
    counts, arrivals = flows_by_bucket(events, bucket)
    return {
        "queue_totals": queue_totals(counts, arrivals, steps, events),
        "queue_trend": queue_trend(counts, arrivals, bucket),
        "claims_distribution": claims_distribution(steps),
        "latency": latency(steps),
        "failing_fingerprints": failing_fingerprints(steps, top),
        "poison_signatures": poison_signatures(events, top),
        "consumers": consumers(holds, events, top),
        "dead_letter_rate": dead_letter_rate(counts, bucket),
        "rejections": rejections(events, top),
        "dead_letters_by_reason": dead_letters_by_reason(events),
        "redrive_outcomes": redrive_outcomes(steps),
    }
