"""Apache Airflow provider for Kafka consumer groups.

The ``client`` subpackage is pure asyncio and imports neither Airflow nor Spark.
"""

__version__ = "0.1.0"
