"""python-zaqarclient against the pooled falcon app, served over real HTTP.

A wsgiref server in a thread (tests only) stands in for ``zq serve`` until
the CLI is on main. The client has no option for X-Roles, so the test's
client adds ``X-Roles: admin`` to every request, as a gateway would.

What python-zaqarclient expects (zaqarclient/queues/v2/pool.py, flavor.py,
core.py): ``Pool(...)`` PUTs ``{"uri", "weight", "options"[, "flavor"]}``
and ``Flavor(...)`` PUTs ``{"pool_list"}``; ``pool.get()`` and
``flavor.get()`` return the JSON body as is; ``client.pools()`` and
``client.flavors()`` read ``{"pools"|"flavors": [...], "links": [...]}``,
build objects from each item's keys (``name`` popped, the rest as keyword
arguments, so ``href`` must be tolerated: it is) and follow ``links`` rel
``next`` until a page comes back empty; ``update()`` PATCHes the fields as
plain JSON.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from wsgiref.simple_server import WSGIRequestHandler, make_server

import pytest
from zaqarclient.queues.v2 import client as v2

from zq.api import create_app


class QuietHandler(WSGIRequestHandler):
    def log_message(self, format, *args):
        pass


class AdminClient(v2.Client):
    def _request_and_transport(self):
        req, trans = super()._request_and_transport()
        req.headers["X-Roles"] = "admin"
        return req, trans


@pytest.fixture
def url(pooling_config, clock) -> Iterator[str]:
    app = create_app(pooling_config, clock=clock)
    server = make_server("127.0.0.1", 0, app, handler_class=QuietHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        server.server_close()


def make_client(url: str) -> AdminClient:
    conf = {"auth_opts": {"backend": "noauth",
                          "options": {"os_project_id": f"p-{uuid.uuid4().hex}"}}}
    return AdminClient(url, version=2, conf=conf)


def test_pools_and_flavors_through_python_zaqarclient(url, pool_uris):
    client = make_client(url)
    one = client.pool("one", uri=pool_uris["one"], weight=10)
    client.pool("two", uri=pool_uris["two"], weight=20, options={"note": "b"})
    shown = one.get()
    assert shown["uri"] == pool_uris["one"] and shown["weight"] == 10
    one.update({"weight": 30})
    assert one.get()["weight"] == 30
    listed = list(client.pools(limit=1).stream())
    assert [p.name for p in listed] == ["one", "two"]
    assert listed[1].weight == 20

    fast = client.flavor("fast", pool_list=["two"])
    assert fast.get()["pool_list"] == ["two"]
    fast.update({"pool_list": ["one", "two"]})
    assert fast.get()["pool_list"] == ["one", "two"]
    assert [f.name for f in client.flavors()] == ["fast"]

    from zaqarclient.queues.v2 import core

    req, trans = client._request_and_transport()
    core.queue_create(trans, req, "orders", metadata={"_flavor": "fast"})
    queue = client.queue("orders")
    assert queue.metadata(force_reload=True)["_flavor"] == "fast"
    queue.post({"body": "paid", "ttl": 300})
    assert [m.body for m in queue.messages(echo=True)] == ["paid"]

    fast.delete()
    queue.delete()
    one.delete()
    client.pool("two", auto_create=False).delete()
    assert list(client.pools()) == []


def test_an_admin_script_run_twice_through_python_zaqarclient(url, pool_uris):
    # zaqarclient/queues/v2/pool.py and flavor.py: Pool(...) and Flavor(...)
    # PUT every time ("zaqar server updates pool if it is already exists"),
    # so a setup script can run again; pools may name their flavor first.
    client = make_client(url)
    for weight in (10, 20):  # the second run changes the weights
        client.pool("one", uri=pool_uris["one"], weight=weight, flavor="fast")
        client.pool("two", uri=pool_uris["two"], weight=weight, flavor="fast",
                    options={"note": "b"})
        client.flavor("fast", pool_list=["one", "two"])
    assert client.pool("one", auto_create=False).get()["weight"] == 20
    assert client.flavor("fast", auto_create=False).get()["pool_list"] == ["one", "two"]

    # Listings keep `detailed` on every page the client follows.
    pools = list(client.pools(detailed=True, limit=1).stream())
    assert [(p.name, p.options) for p in pools] == [("one", {}), ("two", {"note": "b"})]
    flavors = list(client.flavors(detailed=True, limit=1).stream())
    assert [(f.name, f.capabilities) for f in flavors] == [("fast", {})]

    # PATCH {"flavor": ""} takes a pool out of its flavor.
    client.pool("two", auto_create=False).update({"flavor": ""})
    assert client.pool("two", auto_create=False).get()["flavor"] is None
    assert client.flavor("fast", auto_create=False).get()["pool_list"] == ["one"]

    from zaqarclient.queues.v2 import core

    req, trans = client._request_and_transport()
    core.queue_create(trans, req, "orders", metadata={"_flavor": "fast"})
    client.queue("orders").post([{"body": 1, "ttl": 300}, {"body": 2, "ttl": 300}])
    health = client.health()
    assert health["one"]["message_volume"] == {"free": 2, "claimed": 0, "total": 2}
    assert health["two"]["message_volume"]["total"] == 0
