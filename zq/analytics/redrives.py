"""The poison workflow's tables: rejections, dead letters by reason, redrive outcomes.

- ``rejections``: per queue, the descriptions consumers gave when they
  rejected a message, most rejections first (``rank`` 1 is the commonest;
  the first ``--top`` of each queue). A rejection is a ``rejected`` event
  (a retry reject: the message stays, ``retries``) or a dead letter move
  with reason ``rejected`` (a terminal reject, ``terminal``). A reject
  without a description counts under ``(none)``.
- ``dead_letters_by_reason``: per source queue and dead letter queue, the
  dead letter moves by reason (``max_claim_count``, ``rejected``,
  ``expired``; ``(none)`` for events written before reasons existed) and
  their ``share`` of that queue's dead letters.
- ``redrive_outcomes``: per queue a dead letter queue redrove messages to,
  what each redrive led to, judged by the message's steps after it and
  before its next redrive: ``succeeded`` (deleted), ``died_again`` (dead
  lettered again, for any reason), ``expired`` (its ttl ran out),
  ``failed_again`` (not ended yet, but at least one delivery failed since:
  released, rejected, or the claim ran out), ``pending`` (not ended, no
  failed delivery: not claimed yet, or claimed now, or removed by a
  purge). The five add up to ``redriven``. ``success_rate`` = succeeded /
  (succeeded + died_again + expired), over the redrives that ended.
  ``automatic``: how many of the redrives were automatic, made when the
  queue's breaker closed after an outage (reason ``auto_redriven``,
  zq.poison.auto_redrive) rather than asked for.
"""

from __future__ import annotations

from pyspark.sql import Column, DataFrame, Window
from pyspark.sql import functions as F

from zq import events as ev
from zq.analytics.lifecycles import MESSAGE, ORDER, ended_by, is_kind
from zq.poison.moves import REASON_AUTO_REDRIVEN, REASON_REJECTED

NONE = "(none)"
ISO = "yyyy-MM-dd'T'HH:mm:ss'Z'"
OUTCOMES = ("succeeded", "failed_again", "died_again", "expired", "pending")


def _count(condition: Column) -> Column:
    return F.count(F.when(condition, 1))


def _iso(seconds: Column) -> Column:
    return F.date_format(F.timestamp_seconds(seconds), ISO)


def rejections(events: DataFrame, top: int = 20) -> DataFrame:
    terminal = is_kind(ev.DEAD_LETTERED) & (F.col("reason") == REASON_REJECTED)
    chosen = events.where((is_kind(ev.REJECTED) | terminal) & F.col("message_id").isNotNull())
    per_description = (
        chosen.groupBy("project", "queue",
                       F.coalesce(F.col("description"), F.lit(NONE)).alias("description"))
        .agg(F.count(F.lit(1)).alias("rejections"),
             _count(is_kind(ev.REJECTED)).alias("retries"),
             _count(terminal).alias("terminal"),
             F.countDistinct(*MESSAGE).alias("messages"),
             F.min("time").alias("_first"), F.max("time").alias("_last"))
    )
    ranked = Window.partitionBy("project", "queue").orderBy(
        F.desc("rejections"), F.desc("messages"), "description")
    return (
        per_description.withColumn("rank", F.row_number().over(ranked))
        .where(F.col("rank") <= top)
        .select("project", "queue", "rank", "description", "rejections", "retries", "terminal",
                "messages", _iso(F.col("_first")).alias("first"),
                _iso(F.col("_last")).alias("last"))
        .orderBy("project", "queue", "rank")
    )


def dead_letters_by_reason(events: DataFrame) -> DataFrame:
    moves = events.where(is_kind(ev.DEAD_LETTERED) & F.col("message_id").isNotNull())
    per_reason = moves.groupBy(
        "project", "queue", F.col("to_queue").alias("dead_letter_queue"),
        F.coalesce(F.col("reason"), F.lit(NONE)).alias("reason"),
    ).agg(F.count(F.lit(1)).alias("dead_letters"),
          F.countDistinct(*MESSAGE).alias("messages"))
    queue = Window.partitionBy("project", "queue")
    return (
        per_reason.withColumn("share", F.col("dead_letters") / F.sum("dead_letters").over(queue))
        .orderBy("project", "queue", F.desc("dead_letters"), "dead_letter_queue", "reason")
    )


def redrive_outcomes(steps: DataFrame) -> DataFrame:
    at = F.struct(*ORDER)
    later = Window.partitionBy(*MESSAGE).orderBy("redriven_at")
    redrives = (
        steps.where(is_kind(ev.REDRIVEN))
        .select(*MESSAGE, F.col("queue").alias("dead_letter_queue"),
                F.col("to_queue").alias("queue"), at.alias("redriven_at"),
                (F.col("reason") == REASON_AUTO_REDRIVEN).alias("automatic"))
        .withColumn("next_redrive", F.lead("redriven_at").over(later))
    )
    ends = F.col("kind").isin(ev.DELETED, ev.DEAD_LETTERED, ev.EXPIRED)
    failed = (F.col("kind").isin(ev.RELEASED, ev.REJECTED)
              | (F.col("claim_end") == "expired"))
    # Only the steps that end a redrive or fail a delivery count: the others
    # are left out before the join, which then sorts far fewer rows (a
    # redrive they alone followed still gets its row from the left join).
    after = steps.select(
        *[F.col(c).alias(f"_{c}") for c in MESSAGE], at.alias("at"), "kind",
        F.when(is_kind(ev.CLAIMED), ended_by()).alias("claim_end"),
    ).where(ends | failed)
    inside = ((F.col("at") > F.col("redriven_at"))
              & (F.col("next_redrive").isNull() | (F.col("at") < F.col("next_redrive"))))
    same_message = [F.col(c) == F.col(f"_{c}") for c in MESSAGE]
    joined = redrives.join(after, [*same_message, inside], "left")
    per_redrive = joined.groupBy(*MESSAGE, "dead_letter_queue", "queue", "redriven_at",
                                 "automatic").agg(
        F.min(F.when(ends, F.struct("at", "kind"))).getField("kind").alias("end"),
        _count(failed).alias("failures"),
    )
    end = F.col("end")
    outcome = (F.when(end == ev.DELETED, "succeeded")
               .when(end == ev.DEAD_LETTERED, "died_again")
               .when(end == ev.EXPIRED, "expired")
               .when(F.col("failures") > 0, "failed_again")
               .otherwise("pending"))
    counted = per_redrive.withColumn("outcome", outcome)
    ended = F.col("succeeded") + F.col("died_again") + F.col("expired")
    return (
        counted.groupBy("project", "queue", "dead_letter_queue").agg(
            F.count(F.lit(1)).alias("redriven"),
            F.countDistinct(*MESSAGE).alias("messages"),
            *[_count(F.col("outcome") == name).alias(name) for name in OUTCOMES],
            _count(F.col("automatic")).alias("automatic"))
        .withColumn("success_rate", F.when(ended > 0, F.col("succeeded") / ended))
        .orderBy(F.desc("redriven"), "project", "queue", "dead_letter_queue")
    )
