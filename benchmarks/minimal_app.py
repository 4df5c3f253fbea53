"""The ceiling of the HTTP layer: a falcon app that does no work.

It answers the routes the load generator uses with fixed documents of the
same shape as zq's (ids, Location headers, 1 KB bodies), after reading and
parsing the request body with orjson as zq does, and touches no storage.
Served by the same server as zq, it shows what the server, falcon and the
generator cost on their own:

    gunicorn -w 2 -k gthread --threads 4 -b 127.0.0.1:18802 benchmarks.minimal_app:app
"""

from __future__ import annotations

import time
import uuid

import falcon
import falcon.media
import orjson

CLAIMED = 10
FILLER = "x" * 990


class Ping:
    def on_get(self, req: falcon.Request, resp: falcon.Response) -> None:
        resp.status = falcon.HTTP_204


class Messages:
    def on_post(self, req: falcon.Request, resp: falcon.Response, queue: str) -> None:
        posted = req.get_media()["messages"]
        ids = [uuid.uuid4().hex for _ in posted]
        resp.status = falcon.HTTP_201
        resp.location = f"/v2/queues/{queue}/messages?ids={','.join(ids)}"
        resp.media = {"resources": [f"/v2/queues/{queue}/messages/{i}" for i in ids]}

    def on_delete(self, req: falcon.Request, resp: falcon.Response, queue: str) -> None:
        req.get_param_as_list("ids")
        resp.status = falcon.HTTP_204


class Claims:
    def on_post(self, req: falcon.Request, resp: falcon.Response, queue: str) -> None:
        req.get_media()
        claim_id = uuid.uuid4().hex
        now = time.time()
        resp.status = falcon.HTTP_201
        resp.location = f"/v2/queues/{queue}/claims/{claim_id}"
        resp.media = {"messages": [
            {"id": mid, "href": f"/v2/queues/{queue}/messages/{mid}?claim_id={claim_id}",
             "ttl": 3600, "age": 0, "body": {"data": FILLER, "t": now, "p": 0}}
            for mid in (uuid.uuid4().hex for _ in range(CLAIMED))]}


class Queue:
    def on_put(self, req: falcon.Request, resp: falcon.Response, queue: str) -> None:
        resp.status = falcon.HTTP_201

    def on_delete(self, req: falcon.Request, resp: falcon.Response, queue: str) -> None:
        resp.status = falcon.HTTP_204


app = falcon.App()
_json = falcon.media.JSONHandler(dumps=orjson.dumps, loads=orjson.loads)
app.req_options.media_handlers[falcon.MEDIA_JSON] = _json
app.resp_options.media_handlers[falcon.MEDIA_JSON] = _json
app.add_route("/v2/ping", Ping())
app.add_route("/v2/queues/{queue}", Queue())
app.add_route("/v2/queues/{queue}/messages", Messages())
app.add_route("/v2/queues/{queue}/claims", Claims())
