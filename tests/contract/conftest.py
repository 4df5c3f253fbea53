import pytest

from tests.backends import clock, project, selected_backends, storage, storage_factory

__all__ = ["backend_name", "clock", "project", "storage", "storage_factory"]


@pytest.fixture(scope="session", params=selected_backends("contract"))
def backend_name(request: pytest.FixtureRequest) -> str:
    """The backend of the contract test: every backend, the opt-in ones included."""
    return request.param
