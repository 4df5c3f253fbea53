from tests.backends import backend_name, clock, project, storage, storage_factory

__all__ = ["backend_name", "clock", "project", "storage", "storage_factory"]
