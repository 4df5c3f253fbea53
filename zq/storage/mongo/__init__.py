"""MongoDB storage driver (pymongo 4.x); ``mongomock://NAME`` for demos and tests."""

from zq.storage.mongo.storage import MongoStorage, open_mongo

__all__ = ["MongoStorage", "open_mongo"]
