"""``Client``: zq's REST API (Zaqar v2 and zq's extensions) over httpx."""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import httpx

from zq.client.errors import (
    NotFound,
    QueueExists,
    Suspected,
    TransportError,
    ZqClientError,
    error_for,
)
from zq.client.models import (
    BreakerInfo,
    Claim,
    ClaimAnswer,
    ConsumerInfo,
    Message,
    QueueStats,
    RedriveResult,
)

PATCH_TYPE = "application/openstack-messaging-v2.0-json-patch"
SUSPECTED_HEADER = "X-Zq-Suspected"
# zq sets it on the answer to every claim that asked to wait (``wait`` > 0):
# the seconds the server honoured. Zaqar, which ignores ``wait``, never does.
WAIT_HEADER = "X-Zq-Wait"


class Client:
    """One Client-ID in one project talking to one zq server.

    ``url`` is the server's root (``http://host:port``, with or without
    ``/v2``). Every error answer raises a ZqClientError subclass carrying
    the server's title and description. Thread-safe (one httpx.Client).
    """

    def __init__(self, url: str, *, project: str, client_id: str | None = None,
                 token: str | None = None, timeout: float = 30.0,
                 transport: httpx.BaseTransport | None = None) -> None:
        base = url.rstrip("/")
        base = base.removesuffix("/v2")
        self.client_id = client_id or str(uuid.uuid4())
        self.project = project
        self.base_url = base
        self.timeout = timeout
        headers = {"Client-ID": self.client_id, "X-Project-ID": project,
                   "Accept": "application/json"}
        if token:
            headers["X-Auth-Token"] = token
        self._http = httpx.Client(base_url=base + "/v2", headers=headers, timeout=timeout,
                                  transport=transport)

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> Client:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- transport --------------------------------------------------------

    def _call(self, method: str, path: str, *, params: Mapping[str, Any] | None = None,
              json_body: Any = None, content: bytes | None = None,
              headers: Mapping[str, str] | None = None,
              timeout: float | None = None) -> httpx.Response:
        extra: dict[str, Any] = {} if timeout is None else {"timeout": timeout}
        try:
            response = self._http.request(method, path, params=params, json=json_body,
                                          content=content, headers=headers, **extra)
        except httpx.HTTPError as exc:
            raise TransportError(0, type(exc).__name__, str(exc)) from exc
        if response.status_code >= 400:
            title, description = response.reason_phrase, response.text
            try:
                doc = response.json()
                title = doc.get("title", title)
                description = doc.get("description", description)
            except (ValueError, AttributeError):
                pass
            raise error_for(response.status_code, title, description)
        return response

    # -- queues -----------------------------------------------------------

    def create_queue(self, queue: str, metadata: Mapping[str, Any] | None = None, *,
                     update: bool = False) -> bool:
        """Create ``queue`` with ``metadata``; False when it already existed.

        An existing queue whose metadata already has these values is fine
        (False). One with other values raises QueueExists, since the server
        keeps what it has; with ``update`` the given keys are set instead
        (the others stay as they are).
        """
        response = self._call("PUT", f"/queues/{queue}",
                              json_body=dict(metadata) if metadata is not None else None)
        if response.status_code == 201 or not metadata:
            return response.status_code == 201
        stored = self.queue_metadata(queue)
        differences = {key: (stored.get(key), value) for key, value in metadata.items()
                       if key not in stored or stored[key] != value}
        if differences:
            if not update:
                raise QueueExists(queue, differences)
            self.set_metadata(queue, {key: metadata[key] for key in differences})
        return False

    def queue_metadata(self, queue: str) -> dict[str, Any]:
        return self._call("GET", f"/queues/{queue}").json()

    def set_metadata(self, queue: str, values: Mapping[str, Any],
                     remove: Iterable[str] = ()) -> dict[str, Any]:
        """Add or replace ``values`` and remove ``remove`` keys (a JSON patch)."""
        ops: list[dict[str, Any]] = [
            {"op": "add", "path": f"/metadata/{key}", "value": value}
            for key, value in values.items()]
        ops += [{"op": "remove", "path": f"/metadata/{key}"} for key in remove]
        return self._call("PATCH", f"/queues/{queue}", content=json.dumps(ops).encode(),
                          headers={"Content-Type": PATCH_TYPE}).json()

    def delete_queue(self, queue: str) -> None:
        self._call("DELETE", f"/queues/{queue}")

    def list_queues(self, *, limit: int | None = None, marker: str | None = None,
                    detailed: bool = False) -> list[dict[str, Any]]:
        """One page of queues (``{"name", "href"[, "metadata"]}``)."""
        params: dict[str, Any] = {"detailed": str(detailed).lower()}
        if limit is not None:
            params["limit"] = limit
        if marker is not None:
            params["marker"] = marker
        response = self._call("GET", "/queues", params=params)
        return [] if response.status_code == 204 else response.json().get("queues", [])

    def stats(self, queue: str) -> QueueStats:
        answer = self._call("GET", f"/queues/{queue}/stats").json()
        doc = answer["messages"]
        shown = answer.get("breaker")
        breaker = None if shown is None else BreakerInfo(
            state=shown["state"], since=shown["since"], description=shown.get("description"))
        return QueueStats(free=doc["free"], claimed=doc["claimed"], total=doc["total"],
                          delayed=doc.get("delayed", 0), waiting=answer.get("waiting"),
                          breaker=breaker)

    def purge(self, queue: str) -> None:
        self._call("POST", f"/queues/{queue}/purge", json_body={})

    # -- messages ---------------------------------------------------------

    def post(self, queue: str, *bodies: Any, ttl: int | None = None,
             delay: int | None = None) -> list[str]:
        """Post one message per body; their ids, in order."""
        messages = []
        for body in bodies:
            message: dict[str, Any] = {"body": body}
            if ttl is not None:
                message["ttl"] = ttl
            if delay is not None:
                message["delay"] = delay
            messages.append(message)
        response = self._call("POST", f"/queues/{queue}/messages",
                              json_body={"messages": messages})
        return [href.rsplit("/", 1)[1] for href in response.json()["resources"]]

    def list_messages(self, queue: str, *, limit: int | None = None, echo: bool = True,
                      include_claimed: bool = False, include_history: bool = False,
                      marker: str | None = None) -> list[Message]:
        params = _history({"echo": str(echo).lower(),
                           "include_claimed": str(include_claimed).lower()}, include_history)
        if limit is not None:
            params["limit"] = limit
        if marker is not None:
            params["marker"] = marker
        response = self._call("GET", f"/queues/{queue}/messages", params=params)
        if response.status_code == 204:
            return []
        return [Message.from_json(m) for m in response.json().get("messages", [])]

    def get_message(self, queue: str, message_id: str, *,
                    include_history: bool = False) -> Message:
        params = _history({}, include_history)
        return Message.from_json(
            self._call("GET", f"/queues/{queue}/messages/{message_id}", params=params).json())

    def get_messages(self, queue: str, message_ids: Sequence[str], *,
                     include_history: bool = False) -> list[Message]:
        """Those of ``message_ids`` that are in ``queue``; [] when none is."""
        params = _history({"ids": ",".join(message_ids)}, include_history)
        try:
            doc = self._call("GET", f"/queues/{queue}/messages", params=params).json()
        except NotFound:  # the API's answer when none of them exists
            return []
        return [Message.from_json(m) for m in doc.get("messages", [])]

    def delete_message(self, queue: str, message_id: str, *,
                       claim_id: str | None = None) -> None:
        params = {"claim_id": claim_id} if claim_id else None
        self._call("DELETE", f"/queues/{queue}/messages/{message_id}", params=params)

    def delete_messages(self, queue: str, message_ids: Sequence[str]) -> None:
        self._call("DELETE", f"/queues/{queue}/messages",
                   params={"ids": ",".join(message_ids)})

    def pop(self, queue: str, count: int = 1, *,
            include_history: bool = False) -> list[Message]:
        """Take and delete up to ``count`` free messages; [] when none is free."""
        params = _history({"pop": count}, include_history)
        doc = self._call("DELETE", f"/queues/{queue}/messages", params=params).json()
        return [Message.from_json(m) for m in doc.get("messages", [])]

    def reject(self, queue: str, message_id: str, claim_id: str, *,
               description: str | None = None, retry: bool = False,
               retry_after: int | None = None) -> None:
        """zq: give a claimed message up.

        Terminal unless ``retry`` (or a ``retry_after``): moved to the dead
        letter queue now (Conflict when the queue has none). A retry with no
        ``retry_after`` waits for the queue's backoff.
        """
        body: dict[str, Any] = {}
        if description is not None:
            body["description"] = description
        if retry or retry_after is not None:
            body["retry_after"] = retry_after
        self._call("POST", f"/queues/{queue}/messages/{message_id}/reject",
                   params={"claim_id": claim_id}, json_body=body)

    # -- claims -----------------------------------------------------------

    def claim(self, queue: str, *, limit: int = 10, ttl: int = 300, grace: int = 60,
              include_history: bool = False, wait: float = 0) -> Claim | None:
        """Claim up to ``limit`` free messages; None when none is free.

        ``wait`` (zq, seconds): when nothing is free, the server holds the
        request until a message can be claimed or ``wait`` has passed
        (long poll); 0 answers at once. Zaqar ignores it and answers at
        once (``claim_answer`` tells which happened). Raises Suspected (zq)
        when the queue refuses this Client-ID work because one of its
        claims lapsed.
        """
        return self.claim_answer(queue, limit=limit, ttl=ttl, grace=grace,
                                 include_history=include_history, wait=wait).claim

    def claim_answer(self, queue: str, *, limit: int = 10, ttl: int = 300, grace: int = 60,
                     include_history: bool = False, wait: float = 0) -> ClaimAnswer:
        """As ``claim``, with what the answer says about ``wait``: whether the
        server honoured it (its ``X-Zq-Wait`` header) and how long it took."""
        params = _history({"limit": limit}, include_history)
        if wait > 0:
            params["wait"] = f"{wait:g}"
        started = time.monotonic()
        # A held request may take the whole wait before its first byte.
        response = self._call("POST", f"/queues/{queue}/claims", params=params,
                              json_body={"ttl": ttl, "grace": grace},
                              timeout=self.timeout + wait if wait > 0 else None)
        seconds = time.monotonic() - started
        honoured = response.headers.get(WAIT_HEADER)
        waited = None if honoured is None else _seconds(honoured)
        if response.status_code == 204:
            lapsed = response.headers.get(SUSPECTED_HEADER)
            if lapsed:
                raise Suspected(lapsed)
            return ClaimAnswer(None, waited, seconds)
        claim_id = response.headers["Location"].rsplit("/", 1)[1]
        claim = Claim(id=claim_id, queue=queue,
                      messages=[Message.from_json(m) for m in response.json()["messages"]])
        return ClaimAnswer(claim, waited, seconds)

    def get_claim(self, queue: str, claim_id: str, *,
                  include_history: bool = False) -> Claim:
        params = _history({}, include_history)
        doc = self._call("GET", f"/queues/{queue}/claims/{claim_id}", params=params).json()
        return Claim(id=claim_id, queue=queue,
                     messages=[Message.from_json(m) for m in doc.get("messages", [])])

    def renew(self, queue: str, claim_id: str, *, ttl: int = 300, grace: int = 60) -> None:
        """Extend a live claim to now + ttl; NotFound once it expired."""
        self._call("PATCH", f"/queues/{queue}/claims/{claim_id}",
                   json_body={"ttl": ttl, "grace": grace})

    def release(self, queue: str, claim_id: str) -> None:
        """End a claim: its messages are free again (after their backoff, if any)."""
        self._call("DELETE", f"/queues/{queue}/claims/{claim_id}")

    # -- zq's extensions --------------------------------------------------

    def consumers(self, queue: str) -> list[ConsumerInfo]:
        """The Client-IDs that claimed from ``queue`` in the last hour."""
        doc = self._call("GET", f"/queues/{queue}/consumers").json()
        return [ConsumerInfo(client_id=c["client_id"], last_claim=c["last_claim"],
                             live_claims=c["live_claims"], lapsed_claims=c["lapsed_claims"],
                             suspected=c["suspected"], waiting=c.get("waiting", 0))
                for c in doc["consumers"]]

    def force_breaker(self, queue: str, state: str) -> None:
        """Force ``queue``'s breaker ``"open"`` or ``"closed"`` (``stats().breaker`` shows it).

        ``Conflict`` when its breaker is off, ``NotFound`` for a missing queue.
        """
        self._call("POST", f"/queues/{queue}/breaker", json_body={"state": state})

    def redrive(self, dlq: str, *, to: str | None = None,
                filter: Mapping[str, Any] | None = None, limit: int | None = None,
                dry_run: bool = False, marker: str | None = None,
                create: bool = False) -> RedriveResult:
        """Move dead letters of ``dlq`` back (to their source queue unless ``to``).

        ``filter`` keys as the API: ids, reason, from, fingerprint,
        dead_lettered_before, dead_lettered_after. At most ``limit`` per
        call; ``RedriveResult.next`` is the ``marker`` a further call
        continues from (``redrive_all`` follows it). A destination that does
        not exist is an error (``NotFound``) unless ``create``.
        """
        body: dict[str, Any] = {}
        if to is not None:
            body["to"] = to
        if filter:
            body["filter"] = dict(filter)
        if limit is not None:
            body["limit"] = limit
        if dry_run:
            body["dry_run"] = True
        if marker is not None:
            body["marker"] = marker
        if create:
            body["create"] = True
        doc = self._call("POST", f"/queues/{dlq}/redrive", json_body=body).json()
        return RedriveResult(matched=doc["matched"], moved=doc["moved"],
                             to=dict(doc.get("to", {})), next=doc.get("next"),
                             created=tuple(doc.get("created", ())),
                             unreadable=tuple(doc.get("unreadable", ())))

    def redrive_all(self, dlq: str, *, to: str | None = None,
                    filter: Mapping[str, Any] | None = None,
                    limit: int | None = None, create: bool = False) -> RedriveResult:
        """Redrive page after page until ``next`` is null; the summed result."""
        matched = moved = 0
        totals: dict[str, int] = {}
        created: list[str] = []
        unreadable: list[str] = []
        marker = None
        while True:
            page = self.redrive(dlq, to=to, filter=filter, limit=limit, marker=marker,
                                create=create)
            matched += page.matched
            moved += page.moved
            for queue, count in page.to.items():
                totals[queue] = totals.get(queue, 0) + count
            created += [q for q in page.created if q not in created]
            unreadable += page.unreadable
            if page.next is None:
                return RedriveResult(matched=matched, moved=moved, to=totals, next=None,
                                     created=tuple(created), unreadable=tuple(unreadable))
            marker = page.next


def _history(params: dict[str, Any], include_history: bool) -> dict[str, Any]:
    """``params``, asking for each message's history when ``include_history``
    (zq; a Zaqar server ignores the parameter)."""
    if include_history:
        params["include_history"] = "true"
    return params


def _seconds(text: str) -> float:
    """A header's seconds; a value that is no number still says the server waits."""
    try:
        return float(text)
    except ValueError:
        return 0.0


__all__ = ["Client", "ZqClientError"]
