"""Which Airflow is running, and the few shims that ``apache-airflow-providers-common-compat`` has
no answer for.

The provider imports Airflow's classes through common-compat (``airflow.providers.common.compat.sdk``:
the Task SDK first, Airflow 2's paths where there is none), as the official providers do. What is
left is here, each shim saying which versions need it:

* the async connection lookup (``BaseHook.aget_connection``: 3.1+; ``Connection.aextra_dejson``:
  3.3+) and ``amask_secret`` (3.3+): below those versions the sync call runs in a worker thread
  (asgiref's ``sync_to_async``, as the official providers did before the async lookups existed),
  never on the triggerer's event loop;
* :func:`require_airflow`: a feature that needs a newer Airflow fails where it is declared (at DAG
  parse time), naming the feature, the version it needs and the version running.

The version constants follow the official providers' ``version_compat.py``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from packaging.version import Version

if TYPE_CHECKING:
    from airflow.sdk import BaseHook, Connection


def airflow_version() -> tuple[int, int, int]:
    from airflow import __version__

    version = Version(__version__)
    return version.major, version.minor, version.micro


AIRFLOW_VERSION = airflow_version()
AIRFLOW_V_3_0_PLUS = AIRFLOW_VERSION >= (3, 0, 0)
AIRFLOW_V_3_1_PLUS = AIRFLOW_VERSION >= (3, 1, 0)
AIRFLOW_V_3_3_PLUS = AIRFLOW_VERSION >= (3, 3, 0)


class AirflowVersionError(RuntimeError):
    """A feature of this provider that the running Airflow cannot carry."""


def require_airflow(feature: str, needed: tuple[int, int], why: str) -> None:
    """Raise :class:`AirflowVersionError` when the running Airflow is older than ``needed``."""
    if AIRFLOW_VERSION[:2] < needed:
        running = ".".join(map(str, AIRFLOW_VERSION))
        raise AirflowVersionError(
            f"{feature} needs Apache Airflow {needed[0]}.{needed[1]} or later ({why}); this is Airflow "
            f"{running}. Upgrade Airflow, or use what works on {running}: see the support table in "
            "airflow-provider-kgroups' installation docs."
        )


async def aget_connection(hook: BaseHook, conn_id: str) -> Connection:
    """``hook.aget_connection`` (3.1+); below, the sync lookup in a worker thread."""
    if hasattr(hook, "aget_connection"):
        return await hook.aget_connection(conn_id)
    from asgiref.sync import sync_to_async

    connection: Connection = await sync_to_async(hook.get_connection)(conn_id)
    return connection


async def aextra_dejson(conn: Connection) -> dict[str, Any]:
    """``conn.aextra_dejson()`` (3.3+); below, the sync property in a worker thread (older
    versions may look a secrets backend up while decoding the extra)."""
    if hasattr(conn, "aextra_dejson"):
        return await conn.aextra_dejson()
    from asgiref.sync import sync_to_async

    extra: dict[str, Any] = await sync_to_async(lambda: conn.extra_dejson)()
    return extra


async def amask_secret(secret: str) -> None:
    """``airflow.sdk.log.amask_secret`` (3.3+); below, ``mask_secret`` in a worker thread (on 3.0-3.2
    it may talk to the supervisor synchronously)."""
    if AIRFLOW_V_3_3_PLUS:
        from airflow.sdk.log import amask_secret as mask

        await mask(secret)
        return
    from airflow.providers.common.compat.sdk import mask_secret
    from asgiref.sync import sync_to_async

    await sync_to_async(mask_secret)(secret)
