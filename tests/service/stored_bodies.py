"""Write a message's stored body below zq, as someone with write access to the backend.

Used to show what zq does with a body it did not store: one copied from
another message, or an altered one.
"""

from __future__ import annotations

import sqlalchemy as sa
from bson import ObjectId

from zq.storage.base import Storage
from zq.storage.mongo.storage import MongoStorage
from zq.storage.redis.storage import RedisStorage
from zq.storage.sql.schema import messages
from zq.storage.sql.storage import SqlStorage


def overwrite_body(storage: Storage, message_id: str, body: str) -> None:
    """Replace the stored body of message ``message_id`` with ``body``, verbatim."""
    if isinstance(storage, SqlStorage):
        storage._db.write(lambda conn: conn.execute(
            sa.update(messages).where(messages.c.id == message_id).values(body=body)))
    elif isinstance(storage, RedisStorage):
        # On a cluster the message is under its project's home (any of them).
        for home in storage._scripts.homes():
            if storage.client.exists(f"{home}m:{message_id}"):
                storage.client.hset(f"{home}m:{message_id}", "body", body)
    elif isinstance(storage, MongoStorage):
        storage._ctx.messages.update_one({"_id": ObjectId(message_id)}, {"$set": {"body": body}})
    else:
        raise TypeError(f"no raw writer for {type(storage).__name__}")
