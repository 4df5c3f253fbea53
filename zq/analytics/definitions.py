"""What every column of zq stats means, in words and units (shown in report.html)."""

from __future__ import annotations

# Finished messages (deleted + dead lettered) a queue or a time bucket needs
# before its dead letter rate is ranked or drawn: a rate of 2 messages is noise.
MIN_FINISHED = 20

_FLOWS = {
    "posted": "messages posted to the queue",
    "dead_lettered_in": "messages moved into this queue by dead letter moves (this is a dead "
                        "letter queue)",
    "redriven_in": "messages moved back into this queue by redrives",
    "claimed": "deliveries (claimed events; a message claimed 3 times counts 3)",
    "released": "deliveries released by the consumer without deleting",
    "rejected": "retry rejects (the message stays; terminal rejects count as dead_lettered)",
    "deleted": "messages deleted (by a claim, a pop or a bulk delete)",
    "dead_lettered": "messages moved out to the dead letter queue, for any reason",
    "redriven": "messages moved out of this dead letter queue by redrives",
    "expired": "messages whose ttl ran out (claims that ran out are not counted here)",
    "purged": "messages removed by purges and queue deletes",
    "dead_letter_rate": "dead_lettered / (deleted + dead_lettered): the share of finished "
                        "messages that failed (0-1)",
}
_QUEUE = {"project": "the project", "queue": "the queue"}
_BUCKET = {"bucket": "the time bucket's start, UTC; its width adapts to the events' time "
                     "range (1 minute under 2 hours, 1 hour under 3 days, else 1 day) unless "
                     "--bucket names one",
           "bucket_seconds": "the bucket's width in seconds (60, 3600, 86400, ...)"}
_SIGNATURE_ID = ("12 hex digits naming the signature in its project (sha256 of the project, "
                 "a line feed and 'by:signature'); zq stats signatures --signature ID lists "
                 "every message of it")
_LATENCY = {"p50": "median, seconds", "p95": "95th percentile, seconds",
            "p99": "99th percentile, seconds", "max": "longest, seconds"}

DEFINITIONS: dict[str, dict[str, str]] = {
    "queue_totals": {**_QUEUE, **_FLOWS,
                     "present": "messages still in the queue when the selected events end",
                     "unaccounted": "posted + dead_lettered_in + redriven_in - deleted - "
                                    "dead_lettered - redriven - expired - purged - present; 0 "
                                    "unless --since/--until cut lifecycles"},
    "queue_trend": {**_BUCKET, **_QUEUE, **_FLOWS},
    "claims_distribution": {**_QUEUE, "outcome": "deleted or dead_lettered",
                            "claims": "claims the message had then (a pop counts as one)",
                            "messages": "messages"},
    "latency": {**_QUEUE, "metric": "post_to_delete (in the queue that deleted it) or "
                                    "post_to_dead_letter (in the source queue), from the "
                                    "original post", "messages": "messages measured",
                **_LATENCY},
    "failing_fingerprints": {"project": "the project", "fingerprint": "hash of the body",
                             "dead_letters": "dead letter moves", "messages":
                             "distinct messages", "queues": "source queues, in the project",
                             "sample": "the earliest body sample"},
    "poison_signatures": {"signature_id": _SIGNATURE_ID, "project": "the project",
                          "by": "shape (JSON key paths and value types) or description",
                          "signature": "the shape or the description", "messages":
                          "distinct failing messages", "events": "failure events (dead letter "
                          "moves and rejects)", "first": "first failure, UTC", "last":
                          "last failure, UTC", "queues": "queues they failed in, in the project",
                          "sample_ids": "the first five messages to fail; the signature_id "
                                        "links to all of them"},
    "signature_messages": {"signature_id": _SIGNATURE_ID,
                           "by": "shape or description", "backend": "the backend the "
                           "message's events came from", "project": "the project",
                           "message_id": "the message", "queues": "queues it failed in",
                           "events": "its failure events (dead letter moves and rejects)",
                           "first": "its first failure, UTC", "last": "its last failure, UTC"},
    "consumers": {"client_id": "the consumer's Client-ID", "deliveries": "deliveries to it",
                  "claims": "distinct claims", "deleted": "deliveries it deleted",
                  "released": "deliveries it released", "rejected": "deliveries it rejected "
                  "(retry or terminal)", "expired": "deliveries whose claim ran out",
                  "expired_claims": "distinct claims that ran out"},
    "dead_letter_rate": {**_BUCKET, "deleted": "messages deleted",
                         "dead_lettered": "dead letter moves",
                         "dead_letter_rate": _FLOWS["dead_letter_rate"]},
    "rejections": {**_QUEUE, "rank": "1 = the commonest description in the queue",
                   "description": "what the consumer said; (none) when nothing",
                   "rejections": "retries + terminal", "retries": "retry rejects",
                   "terminal": "terminal rejects (dead lettered)", "messages":
                   "distinct messages", "first": "UTC", "last": "UTC"},
    "dead_letters_by_reason": {**_QUEUE, "dead_letter_queue": "where they went",
                               "reason": "max_claim_count, rejected or expired",
                               "dead_letters": "dead letter moves", "messages":
                               "distinct messages", "share": "part of the queue's dead "
                               "letters (0-1)"},
    "redrive_outcomes": {"project": "the project", "queue": "the queue redriven to",
                         "dead_letter_queue": "the queue redriven from",
                         "redriven": "redrives (= succeeded + failed_again + died_again + "
                                     "expired + pending)",
                         "messages": "distinct messages", "succeeded": "deleted since",
                         "failed_again": "not ended, at least one failed delivery since",
                         "died_again": "dead lettered again", "expired": "ttl ran out",
                         "pending": "not ended, no failed delivery",
                         "success_rate": "succeeded / (succeeded + died_again + expired)",
                         "automatic": "redrives made when the queue's breaker closed after "
                                      "an outage (auto_redriven)"},
}
