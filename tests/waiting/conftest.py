"""Waiting claims on every backend: the app behind zq.buffered_wsgi, in process."""

from tests.backends import backend_name, clock, project, storage, storage_factory

__all__ = ["backend_name", "clock", "project", "storage", "storage_factory"]
