"""A recording stand-in for the driver's database: every collection call is logged.

Works the same on mongomock and a real server: it only wraps what the
driver already holds.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from zq.storage.mongo import MongoStorage

FILTERED = {
    "find", "find_one", "count_documents", "update_one", "update_many",
    "delete_one", "delete_many", "find_one_and_update", "find_one_and_delete",
}


@dataclass
class Call:
    collection: str
    method: str
    filter: dict[str, Any] | None
    update: dict[str, Any] | None
    sort: list[tuple[str, int]] | None


@dataclass
class Recorder:
    calls: list[Call] = field(default_factory=list)

    def writes_to(self, collection: str, doc_id: Any) -> list[Call]:
        """The write calls on ``collection`` whose filter names ``doc_id``."""
        return [
            c for c in self.calls
            if c.collection == collection and c.method not in ("find", "find_one",
                                                               "count_documents")
            and c.filter is not None and c.filter.get("_id") == doc_id
        ]


class _Collection:
    def __init__(self, inner: Any, name: str, recorder: Recorder) -> None:
        self._inner = inner
        self._name = name
        self._recorder = recorder

    def __getattr__(self, attr: str) -> Any:
        method = getattr(self._inner, attr)
        if attr not in FILTERED:
            return method

        def recorded(*args: Any, **kwargs: Any) -> Any:
            filt = args[0] if args else kwargs.get("filter")
            update = args[1] if len(args) > 1 and "update" in attr else kwargs.get("update")
            self._recorder.calls.append(
                Call(self._name, attr, filt, update, kwargs.get("sort"))
            )
            return method(*args, **kwargs)

        return recorded


class _Database:
    def __init__(self, inner: Any, recorder: Recorder) -> None:
        self._inner = inner
        self._recorder = recorder

    def __getitem__(self, name: str) -> _Collection:
        return _Collection(self._inner[name], name, self._recorder)

    def __getattr__(self, attr: str) -> Any:
        return getattr(self._inner, attr)


def record(storage: MongoStorage) -> Recorder:
    """Make ``storage`` log every filtered collection call into the returned recorder."""
    recorder = Recorder()
    backend = storage._ctx
    # MongoContext is frozen for the driver's sake; a test may swap what it holds.
    wrapped = _Database(backend.database, recorder)
    object.__setattr__(backend, "database", wrapped)
    backend.units._database = wrapped
    storage.events._events = wrapped["events"]
    return recorder
