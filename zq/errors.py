"""The errors zq raises below the HTTP layer.

Each class carries a short ``title``; the HTTP layer maps classes to status
codes in one table (zq.api.errors). Storage drivers raise these too, so no
driver-specific exception ever reaches a client.
"""

from __future__ import annotations


class ZqError(Exception):
    """Base of every zq error; ``str(err)`` is the description shown to clients."""

    title = "Error"

    def __init__(self, description: str) -> None:
        super().__init__(description)
        self.description = description


class InvalidRequest(ZqError):
    """The request is malformed or breaks a limit (400)."""

    title = "Invalid request"


class UnableToCreate(InvalidRequest):
    """A create refused for what the request names (400): Zaqar's title for a
    flavor whose ``pool_list`` names a pool that does not exist."""

    title = "Unable to create"


class RequestTooLarge(InvalidRequest):
    """A request body over the server's cap, refused unread (400, as Zaqar).

    Not 413: python-zaqarclient raises on 400 but not on 413, so a producer
    would take a refused post for a success.
    """

    title = "Request body too large"


class NotFound(ZqError):
    """The addressed resource does not exist (404)."""

    title = "Not found"


class QueueNotFound(NotFound):
    title = "Queue not found"

    @classmethod
    def gone(cls, queue: str) -> QueueNotFound:
        """The one text for a queue name that names no queue, on every driver."""
        return cls(f"Queue {queue!r} does not exist.")


class MessageNotFound(NotFound):
    title = "Message not found"

    @classmethod
    def gone(cls, message_id: str) -> MessageNotFound:
        """The one text for a message id that names no alive message, on every driver."""
        return cls(f"Message {message_id!r} does not exist.")


class ClaimNotFound(NotFound):
    title = "Claim not found"

    @classmethod
    def gone(cls, claim_id: str) -> ClaimNotFound:
        """The one text for a claim id that names no live claim, on every driver."""
        return cls(f"Claim {claim_id!r} does not exist or has expired.")


class MessageIsClaimed(ZqError):
    """Deleting a claimed message without its claim id (403)."""

    title = "Message is claimed"

    @classmethod
    def of(cls, message_id: str) -> MessageIsClaimed:
        return cls(f"Message {message_id!r} is claimed; give its claim id to delete it.")


class ClaimMismatch(ZqError):
    """A claim id was given that does not hold the message (400)."""

    title = "Claim does not hold the message"

    @classmethod
    def of(cls, claim_id: str, message_id: str) -> ClaimMismatch:
        return cls(f"Claim {claim_id!r} does not hold message {message_id!r}.")


class Forbidden(ZqError):
    """The change is not allowed in the current state (403)."""

    title = "Forbidden"


class PoolInUseByFlavor(Forbidden):
    title = "Pool is in use by a flavor"


class PoolNotFound(NotFound):
    title = "Pool not found"


class FlavorNotFound(NotFound):
    title = "Flavor not found"


class Conflict(ZqError):
    """The change contradicts the current state (409)."""

    title = "Conflict"


class DeadLetterConflict(Conflict):
    """A dead letter queue setting would form a cycle or cross pools (409)."""

    title = "Invalid dead letter queue"


class MetadataConflict(Conflict):
    """Queue metadata kept changing under a write, which gave up (409)."""

    title = "Metadata changed concurrently"


class PoolConflict(Conflict):
    """A pool or flavor name or URI is taken, or a pool still holds queues (409)."""

    title = "Pool conflict"


class EncryptionNotConfigured(InvalidRequest):
    """A queue asks for encryption but the server has no keys (400)."""

    title = "Encryption is not configured"


class EncryptionFailure(ZqError):
    """A body cannot be sealed or opened with the server's keys (500, logged).

    A server-side fault (a key removed too early, an altered stored body),
    answered with a description that names the message and the key id.
    """

    title = "Message encryption failed"


class StorageUnavailable(ZqError):
    """The backend cannot be reached or failed (503).

    ``description`` is what a client sees: never the backend's own error
    text, which may name hosts, tables or statements. That goes in
    ``detail``, for logs and the command line (``str(err)`` holds both).
    """

    title = "Service unavailable"
    # Seconds a client should wait before trying again (the Retry-After
    # header): a lost connection is retried on the next request, and a
    # failover takes seconds.
    retry_after = 1

    def __init__(self, description: str, *, detail: str = "") -> None:
        super().__init__(description)
        self.detail = detail

    def __str__(self) -> str:
        return f"{self.description} ({self.detail})" if self.detail else self.description


# What a client is told when the backend cannot be reached or has no
# primary that takes writes (during a failover, say). A write whose
# connection was lost may have been committed before the loss: the text
# says so rather than promise that nothing happened.
BACKEND_UNREACHABLE = (
    "The storage backend is unreachable or failing over. A write may or may not have "
    "taken effect; try again after the number of seconds in Retry-After."
)


class NoPoolAvailable(StorageUnavailable):
    """Pooling is on but no pool can take a new queue (503)."""

    title = "No pool available"


class MetadataChanged(Exception):
    """A queue's metadata (or its project's links) is no longer the version acted on.

    Raised by a driver's post, claim or pop given a ``metadata_version``
    that is no longer current, and by a metadata write given a version
    that moved; nothing was changed. The service reads again and retries,
    so it never reaches a client (a write that keeps failing becomes a
    MetadataConflict).
    """


class SubscriptionNotFound(NotFound):
    title = "Subscription not found"

    @classmethod
    def gone(cls, subscription_id: str) -> SubscriptionNotFound:
        """The one text for an id that names no live subscription (Zaqar's), on every driver."""
        return cls(f"Subscription {subscription_id} does not exist")


class SubscriptionConflict(Conflict):
    """A subscriber already subscribed to the queue (409)."""

    title = "Subscription already exists"

    @classmethod
    def duplicate(cls) -> SubscriptionConflict:
        return cls("Such subscription already exists.Subscriptions are unique by project "
                   "+ queue + subscriber URI.")
