"""Claim statistics: export the event logs to Parquet, analyse them with Spark.

``zq.analytics.export`` needs only pyarrow; everything that touches Spark
(``job``, ``lifecycles``, ``tables``, ``report``) imports pyspark lazily so
that ``zq --help`` and the server never pay for it.
"""
