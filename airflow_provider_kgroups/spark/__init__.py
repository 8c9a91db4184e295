"""The Spark side of the provider. Importing this package does not import pyspark.

- :mod:`.offsets`: the Kafka source bridge (``startingOffsets`` / ``endingOffsets`` / ``assign``
  JSON for exactly the range the lag sensor covered), used by the sensor itself.
- :mod:`.lag_history`: the lag-history job over the Parquet history store, a spark-submit
  application (:data:`LAG_HISTORY_APPLICATION`) and a function (``run_lag_history``).
"""

from __future__ import annotations

from pathlib import Path

#: The job's file, the ``application`` of a SparkSubmitOperator (same as ``lag_history.__file__``).
LAG_HISTORY_APPLICATION = str(Path(__file__).with_name("lag_history.py"))

__all__ = ["LAG_HISTORY_APPLICATION"]
