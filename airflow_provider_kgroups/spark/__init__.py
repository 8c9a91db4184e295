"""The Spark side of the provider. Importing this package does not import pyspark.

- :mod:`.offsets`: the Kafka source bridge (``startingOffsets`` / ``endingOffsets`` / ``assign``
  JSON for exactly the range the lag sensor covered), used by the sensor itself.
- :mod:`.lag_history`: the lag-history job over the Parquet history store, a spark-submit
  application (:data:`LAG_HISTORY_APPLICATION`) and a function (``run_lag_history``).
- :mod:`.session`: a session for a task's body, and spark-submit as a child process (what the
  example DAGs use instead of the Airflow Spark provider).
"""

from __future__ import annotations

from pathlib import Path

#: The job's file, the application of ``spark-submit`` (same as ``lag_history.__file__``).
LAG_HISTORY_APPLICATION = str(Path(__file__).with_name("lag_history.py"))

__all__ = ["LAG_HISTORY_APPLICATION"]
