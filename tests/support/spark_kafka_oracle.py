"""Spark's own Kafka source as the oracle for the ``kgroups`` source: the machinery (pyspark 4.2.0
in a cached environment of its own, the connector's jars, a worker process holding one Spark
session) lives in :mod:`demo.spark_oracle`, since the demo compares both sources too; the tests
import it from here."""

from demo.spark_oracle import *  # noqa: F403 - the oracle's public names, re-exported
from demo.spark_oracle import __all__  # the same list
