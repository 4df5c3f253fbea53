"""zq.client: a small typed client for zq's API, and a consumer loop.

    from zq.client import Client, Consumer

``Client`` speaks Zaqar v2 (queues, messages, claims, stats) and zq's
extensions (reject, consumers, redrive); ``Consumer`` claims, handles,
deletes, rejects with the exception's text, renews while a handler runs
and stops cleanly on SIGTERM. Needs httpx (``pip install 'zq[client]'``).
"""

from __future__ import annotations

from zq.client.consumer import Consumer, ConsumerStats, describe
from zq.client.errors import (
    BadRequest,
    Conflict,
    Forbidden,
    NotFound,
    QueueExists,
    ServerError,
    Suspected,
    TransportError,
    Unauthorized,
    Unavailable,
    ZqClientError,
)
from zq.client.http import Client
from zq.client.models import (
    BreakerInfo,
    Claim,
    ClaimAnswer,
    ConsumerInfo,
    Message,
    QueueStats,
    RedriveResult,
)

__all__ = [
    "BadRequest", "BreakerInfo", "Claim", "ClaimAnswer", "Client", "Conflict", "Consumer",
    "ConsumerInfo", "ConsumerStats",
    "Forbidden", "Message", "NotFound", "QueueExists", "QueueStats", "RedriveResult",
    "ServerError", "Suspected", "TransportError", "Unauthorized", "Unavailable", "ZqClientError",
    "describe",
]
