"""The exceptions of zq.client: one per kind of answer, each with the server's words."""

from __future__ import annotations


class ZqClientError(Exception):
    """An error answer from zq: ``status``, and the ``title`` and ``description`` it gave."""

    def __init__(self, status: int, title: str, description: str) -> None:
        super().__init__(f"{status} {title}: {description}")
        self.status = status
        self.title = title
        self.description = description


class BadRequest(ZqClientError):
    """400: the request was refused as malformed, or named a wrong or expired claim."""


class Unauthorized(ZqClientError):
    """401: authentication is missing or was refused."""


class Forbidden(ZqClientError):
    """403: e.g. deleting or rejecting a claimed message without its claim id."""


class NotFound(ZqClientError):
    """404: no such message, claim or pool (an expired claim is not found)."""


class Conflict(ZqClientError):
    """409: e.g. a terminal reject on a queue without a dead letter queue."""


class ServerError(ZqClientError):
    """5xx: the server failed; whether a write took effect may be unknown."""


class Unavailable(ServerError):
    """503: the storage cannot be reached."""


class TransportError(ZqClientError):
    """No answer at all (connection refused, timeout); status 0."""


class Suspected(Exception):
    """A claim refused because this Client-ID let a claim lapse (zq's suspected consumers).

    ``lapsed_claim_id`` is the claim to name (release, delete, renew or
    reject) to show the consumer is alive.
    """

    def __init__(self, lapsed_claim_id: str) -> None:
        super().__init__(f"suspected: claim {lapsed_claim_id} lapsed")
        self.lapsed_claim_id = lapsed_claim_id


class QueueExists(Exception):
    """``create_queue`` found the queue already there with other metadata.

    The server answers such a PUT with 204 and keeps the metadata it has
    (Zaqar's rule), so the client compares and says so instead of letting
    the new values be lost. ``differences`` maps each key asked for to
    ``(stored, asked)``; stored is None for a key the queue does not have.
    """

    def __init__(self, queue: str, differences: dict[str, tuple[object, object]]) -> None:
        shown = ", ".join(
            f"{key} is {'not set' if stored is None else repr(stored)}, not {asked!r}"
            for key, (stored, asked) in differences.items())
        super().__init__(f"queue {queue} already exists with other metadata: {shown} "
                         "(create_queue(..., update=True) sets them)")
        self.queue = queue
        self.differences = differences


_BY_STATUS: dict[int, type[ZqClientError]] = {
    400: BadRequest, 401: Unauthorized, 403: Forbidden, 404: NotFound, 409: Conflict,
    503: Unavailable,
}


def error_for(status: int, title: str, description: str) -> ZqClientError:
    """The exception for an error answer with this status."""
    kind = _BY_STATUS.get(status)
    if kind is None:
        kind = ServerError if status >= 500 else ZqClientError
    return kind(status, title, description)
