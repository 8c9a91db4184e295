"""The floor Spark's Python data source path imposes on any reader on the executors: a data source
with the ``kgroups`` schema and the same splits (one per Kafka partition of the range, chunked by
``maxRecordsPerPartition`` as the real source does), whose ``read()`` decodes nothing and yields
ready pyarrow RecordBatches of the same rows (keys ``k0``..``k99``, the same values, offsets,
timestamps). What it costs in CPU (the JVM and the Python workers) is what the ``kgroups`` source,
or librdkafka wrapped the same way, pays on top of its own fetching and decoding.

Each batch is made from one template built on the first batch of a task (the key, value, topic,
partition, timestamp and type columns; microseconds a batch) plus a fresh offset column, so the
read itself costs next to nothing. ``rowsPerBatch`` sets the batch size, to compare with the
batches the real source yields.
"""

from __future__ import annotations

import json
from collections.abc import Iterator

FORMAT = "kgroups-floor"


def _data_source_class():
    from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

    from airflow_provider_kgroups.client.results import TopicPartition
    from airflow_provider_kgroups.spark.datasource import DEFAULT_RECORDS_PER_PARTITION, SCHEMA, split_ranges

    class FloorReader(DataSourceReader):
        def __init__(
            self, ends: dict[str, int], per_partition: int, rows_per_batch: int, value: bytes
        ) -> None:
            self.ends, self.per_partition, self.rows_per_batch, self.value = (
                ends,
                per_partition,
                rows_per_batch,
                value,
            )

        def partitions(self) -> list:
            ranges = {TopicPartition("floor", int(p)): (0, end) for p, end in self.ends.items()}
            return [InputPartition(c) for c in split_ranges(ranges, self.per_partition)]  # its chunk: .value

        def read(self, partition) -> Iterator:
            return ready_batches(partition.value, self.rows_per_batch, self.value)

    class FloorDataSource(DataSource):
        @classmethod
        def name(cls) -> str:
            return FORMAT

        def schema(self) -> str:
            return SCHEMA

        def reader(self, schema) -> DataSourceReader:
            return FloorReader(
                json.loads(self.options["ends"]),
                int(self.options.get("maxrecordsperpartition", DEFAULT_RECORDS_PER_PARTITION)),
                int(self.options["rowsperbatch"]),
                self.options["value"].encode(),
            )

    return FloorDataSource


def ready_batches(chunk, rows_per_batch: int, value: bytes) -> Iterator:
    """``[chunk.start, chunk.end)`` as RecordBatches of ``rows_per_batch`` rows in the source's schema."""
    import numpy as np
    import pyarrow as pa

    from airflow_provider_kgroups.spark.arrow_records import arrow_schema

    schema = arrow_schema(False)
    template = None
    for first in range(chunk.start, chunk.end, rows_per_batch):
        n = min(rows_per_batch, chunk.end - first)
        if template is None or n != len(template[0]):
            keys = pa.array([b"k%d" % (i % 100) for i in range(n)], pa.binary())
            values = pa.Array.from_buffers(
                pa.binary(),
                n,
                [None, pa.py_buffer(np.arange(n + 1, dtype=np.int32) * len(value)), pa.py_buffer(value * n)],
            )
            template = [
                keys,
                values,
                pa.array([chunk.topic] * n, pa.string()),
                pa.array(np.full(n, chunk.partition, np.int32)),
                None,
                pa.array(np.zeros(n, np.int64), pa.timestamp("us", tz="UTC")),
                pa.array(np.zeros(n, np.int32)),
            ]
        columns = list(template)
        columns[4] = pa.array(np.arange(first, first + n, dtype=np.int64))
        yield pa.RecordBatch.from_arrays(columns, schema=schema)


def read_floor(spark, ends: dict[int, int], rows_per_batch: int, value: bytes) -> int:
    """Like ``bench_datasource.read_kgroups``: the sum of the value lengths, through the floor source."""
    from pyspark import cloudpickle

    import benchmarks.spark_floor as this

    cloudpickle.register_pickle_by_value(this)  # the executors' Python need not find this file
    spark.dataSource.register(_data_source_class())
    df = (
        spark.read.format(FORMAT)
        .option("ends", json.dumps({str(p): e for p, e in ends.items()}))
        .option("rowsPerBatch", str(rows_per_batch))
        .option("value", value.decode())
        .load()
    )
    return df.selectExpr("sum(length(value)) as n").collect()[0]["n"]
