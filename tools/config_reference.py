"""Print the configuration reference table of README.md from zq.config.

    python tools/config_reference.py

tests/test_readme.py checks that README.md holds exactly this table, so a
setting added to zq/config.py without a description here fails the tests.
"""

from __future__ import annotations

import dataclasses
import json

from zq.config import Config

DESCRIPTIONS = {
    "server.host": "address `zq serve` listens on",
    "server.port": "TCP port of `zq serve` (0: any free port)",
    "server.workers": "worker processes of `zq serve`",
    "server.threads": "threads per worker process",
    "server.timeout": "seconds a client may take to send a request line and headers; "
                      "also the seconds a stopping worker may take to finish its requests "
                      "before it is killed",
    "server.body_timeout": "seconds a request body may take to arrive, counted from the end "
                           "of its headers (408 and the connection closed after that); "
                           "see docs/security.md",
    "server.metadata_cache": "seconds a worker keeps the queue metadata it read for posts "
                             "and claims on SQL and MongoDB; a change made through another "
                             "worker shows after at most this long; 0: read every time "
                             "(Redis checks the metadata version instead and needs no "
                             "setting)",
    "server.max_waiting_claims": "claims a worker holds waiting at once (`wait`, "
                                 "docs/consumers.md); more answer at once as without `wait`; "
                                 "granian takes this many requests per worker on top of 512, "
                                 "so waiting claims never starve other requests",
    "server.wait_recheck_interval": "seconds between a worker's looks at the queues its "
                                    "claims wait on (one query per worker and backend); the "
                                    "longest a waiting claim waits for a message another "
                                    "server posted where the backend sends no notification",
    "storage.uri": "storage URI (`sqlite:///path`, `postgresql://user@host/db`, "
                   "`mysql://user@host/db`, `redis://host:6379`, `mongodb://host/db`; "
                   "several PostgreSQL hosts `postgresql://u@h1,h2/db?"
                   "target_session_attrs=read-write`, Redis Sentinel "
                   "`redis+sentinel://s1,s2,s3/MASTER/0`, Redis Cluster "
                   "`redis+cluster://h1:7000,h2:7001/`); "
                   "empty: SQLite file `zq.sqlite3` in the data directory; "
                   "also `ZQ_STORAGE`",
    "redis.wait_replicas": "a Redis storage: after each write script, WAIT until this many "
                           "replicas have it; not confirmed within `wait_timeout`: 503 (the "
                           "write was made and may or may not survive a failover); 0: off. "
                           "See docs/high-availability.md",
    "redis.wait_timeout": "seconds `wait_replicas` waits for the replicas (above 0)",
    "redis.coalesce": "a Redis storage: script calls that reach one worker while its previous "
                      "round trip to Redis runs go out together as one pipeline (each script "
                      "atomic on its own, each request its own reply or error); refused on a "
                      "Redis Cluster. See docs/redis.md, \"Coalesced script calls\"",
    "redis.coalesce_window": "seconds each batch's first call waits for more before it is "
                             "sent (0 to 0.1; 0: only those that queued while the previous "
                             "round trip ran)",
    "sql.group_commit": "a SQL storage: writes that arrive in one worker while its previous "
                        "commit runs share one transaction and one WAL flush (each in its own "
                        "savepoint, each answered only after the shared commit); off by "
                        "default (see docs/storage-sql.md, \"Group commit\")",
    "sql.group_commit_window": "seconds a group's first write waits for more before it starts "
                               "(0 to 0.1; 0: only those that queued while the previous "
                               "commit ran)",
    "limits.max_queues_per_page": "most queues one `GET /v2/queues` page returns",
    "limits.max_messages_per_page": "most messages one `GET .../messages` page returns",
    "limits.max_messages_per_claim_or_pop": "most messages one claim or pop takes",
    "limits.default_page_size": "page size when a request gives no `limit`",
    "limits.max_queue_metadata": "bytes of queue metadata (JSON)",
    "limits.max_messages_post_size": "bytes of one message post",
    "limits.max_project_id_length": "characters of `X-Project-ID`",
    "limits.max_queue_name_length": "characters of a queue name",
    "limits.min_message_ttl": "smallest message ttl, seconds",
    "limits.max_message_ttl": "largest message ttl, seconds",
    "limits.default_message_ttl": "ttl of a message posted without one",
    "limits.max_message_delay": "largest message delay, seconds",
    "limits.default_message_delay": "delay of a message posted without one",
    "limits.min_claim_ttl": "smallest claim ttl, seconds",
    "limits.max_claim_ttl": "largest claim ttl, seconds",
    "limits.default_claim_ttl": "ttl of a claim made without one",
    "limits.min_claim_grace": "smallest claim grace, seconds",
    "limits.max_claim_grace": "largest claim grace, seconds",
    "limits.default_claim_grace": "grace of a claim made without one",
    "limits.max_ids_per_request": "most ids in one `?ids=` or `?claim_ids=` list",
    "limits.max_request_body": "bytes of any request body",
    "limits.max_json_depth": (
        "levels of nested arrays and objects in a request body (a post's envelope "
        "takes 3), 1 to 200"
    ),
    "gc.interval": "seconds between garbage collections in each server worker "
                   "(jittered by ±20%); 0 disables",
    "auth.strategy": "`none` (trust `X-Project-ID`/`X-Roles`), `token` (bearer tokens "
                     "from `tokens_file`) or `keystone` (keystonemiddleware); "
                     "see docs/security.md",
    "auth.tokens_file": "JSON file of hashed tokens written by `zq token add`",
    "auth.keystone_config_file": "oslo.config file with a `[keystone_authtoken]` section",
    "signed_urls.secret_key": "HMAC key of pre-signed URLs (`POST .../share`); "
                              "empty disables sharing",
    "signed_urls.max_expires": "longest validity of a pre-signed URL, seconds",
    "log.level": "zq's log level (libraries log warnings only)",
    "log.format": "`auto` (`console` when stderr is a terminal, else `json`), `json` "
                  "(one object per line), `text` (key=value) or `console` (for people)",
    "pooling.enabled": "spread queues over pools and flavors (see docs/pools.md)",
    "pooling.management": "management store URI (pools, flavors, catalog); "
                          "empty: SQLite file `zq-management.sqlite3` in the data directory",
    "metrics.enabled": "serve `GET /metrics` (Prometheus; see docs/metrics.md)",
    "metrics.per_project": "a `project` label on every metric series (one series per "
                           "project: mind the cardinality)",
    "metrics.cache_seconds": "how long a worker reuses the per-queue gauges it computed",
    "metrics.budget_seconds": "time one scrape may spend reading events, and computing "
                              "per-queue gauges (each); must be positive",
    "metrics.max_queues": "per-queue gauges for at most this many queues, the most "
                          "recently active first",
    "encryption.keys": "AES-256 keys of queues with `_enable_encrypt_messages`, "
                       "`\"id:BASE64,id2:BASE64\"` (32 bytes each); empty: no queue may "
                       "encrypt; see docs/encryption.md",
    "encryption.active_key": "id of the key new messages are encrypted with; "
                             "empty: the only key",
    "encryption.fingerprint_key": "base64 HMAC key (at least 32 bytes) of the body "
                                  "fingerprints of encrypted queues; required with `keys`",
    "encryption.open_legacy_bodies": "open bodies sealed by earlier zq versions "
                                     "(`zqe1:`, bound to the project only); turn it off "
                                     "once none is left; see docs/encryption.md",
    "limits.max_subscriptions_per_page": "most subscriptions one `GET .../subscriptions` "
                                         "page returns",
    "limits.min_subscription_ttl": "shortest subscription ttl, seconds",
    "limits.max_subscription_ttl": "longest subscription ttl, seconds",
    "limits.default_subscription_ttl": "ttl of a subscription created without one, seconds",
    "limits.max_subscriber_length": "longest subscriber URI, characters",
    "limits.max_claim_wait": "longest `wait` a claim may ask for, seconds "
                             "(`POST .../claims?wait=S`, docs/consumers.md)",
    "notifications.enabled": "run the notifier process inside `zq serve` (see "
                             "docs/notifications.md)",
    "notifications.allowed_hosts": "comma separated `HOST[:PORT]` (name, IP or CIDR) webhooks "
                                   "may go to; empty: no webhook is sent; private and "
                                   "loopback addresses need an IP or CIDR entry",
    "notifications.poll_interval": "seconds between looks at the event log when idle",
    "notifications.timeout": "seconds for one webhook or mail attempt",
    "notifications.concurrency": "notification attempts in flight at once",
    "notifications.queue_depth": "events one subscription reads into memory at a time",
    "notifications.lease_seconds": "how long a subscription stays with one server without news",
    "notifications.settle_seconds": "on event logs whose order is not final at write time "
                                    "(MariaDB, MongoDB without transactions): events younger "
                                    "than this wait",
    "notifications.max_redirects": "redirects a webhook follows, each to an allowed host only",
    "notifications.require_confirmation": "Zaqar's require_confirmation: an unconfirmed "
                                          "subscriber is sent nothing but its confirmation "
                                          "request",
    "notifications.smtp_host": "SMTP server for `mailto:` subscribers; empty: mail is not "
                               "sent (reported)",
    "notifications.smtp_port": "SMTP server port",
    "notifications.smtp_from": "sender address of notification mail",
    "notifications.public_url": "where subscribers reach this API (`https://host:port`): "
                                "confirmation requests then carry a full WSGISubscribeURL; "
                                "empty: only the path",
}


def reference_rows() -> list[tuple[str, str, str, str]]:
    """(file key, default, environment variable, description) for every setting."""
    config = Config()
    rows = []
    for section in dataclasses.fields(config):
        values = getattr(config, section.name)
        for item in dataclasses.fields(values):
            key = f"{section.name}.{item.name}"
            default = getattr(values, item.name)
            shown = f"`{json.dumps(default)}`"  # as TOML writes it
            env = f"ZQ_{section.name}_{item.name}".upper()
            rows.append((f"`[{section.name}] {item.name}`", shown, f"`{env}`",
                         DESCRIPTIONS[key]))
    return rows


def reference_table() -> str:
    """The Markdown table of every setting."""
    lines = ["| file key | default | environment | meaning |", "|---|---|---|---|"]
    lines += [f"| {key} | {default} | {env} | {text} |"
              for key, default, env, text in reference_rows()]
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    print(reference_table(), end="")
