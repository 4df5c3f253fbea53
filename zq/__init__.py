"""zq: a Zaqar v2 compatible message queue built around dead letter queues."""

__version__ = "0.1.0"
