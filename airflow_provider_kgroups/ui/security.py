"""Who may see the page: Airflow's own authentication and the auth manager's permissions.

The user comes from Airflow's JWT (the UI's ``_token`` cookie, or an ``Authorization: Bearer``
token from ``POST /auth/token``), resolved by the api-server's ``get_user`` dependency: no
token is a 401, a bad one a 401/403, as on Airflow's own API. The page shows consumer groups
that DAGs gate on and whose lag becomes asset events, so a user must be allowed to read DAGs
(all of them: ``is_authorized_dag(GET)`` without a DAG id) and assets
(``is_authorized_asset(GET)``); the DAGs a group page lists as gates are further limited to
the ones the user may read (``get_authorized_dag_ids``).

The check is written out here rather than reusing ``requires_access_dag``: that one takes a
``dag_id`` from the query string when there is one, so ``?dag_id=<a DAG the user may read>``
would narrow the check to that one DAG.
"""

from __future__ import annotations

from typing import Annotated, Any

from airflow.api_fastapi.app import get_auth_manager
from airflow.api_fastapi.core_api.security import get_user
from fastapi import Depends, HTTPException, status

__all__ = ["ReaderDep", "require_reader", "readable_dag_ids"]


def require_reader(user: Annotated[Any, Depends(get_user)]) -> Any:
    """The authenticated user, if the auth manager lets them read DAGs and assets; else 403."""
    manager = get_auth_manager()
    if not manager.is_authorized_dag(method="GET", user=user):
        raise HTTPException(
            status.HTTP_403_FORBIDDEN,
            "Forbidden: reading consumer groups needs read access to DAGs and assets",
        )
    if not manager.is_authorized_asset(method="GET", user=user):
        raise HTTPException(
            status.HTTP_403_FORBIDDEN,
            "Forbidden: reading consumer groups needs read access to DAGs and assets",
        )
    return user


ReaderDep = Annotated[Any, Depends(require_reader)]


def readable_dag_ids(user: Any) -> set[str]:
    return set(get_auth_manager().get_authorized_dag_ids(user=user, method="GET"))
