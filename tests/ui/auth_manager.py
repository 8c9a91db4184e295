"""Airflow's SimpleAuthManager, except that the user ``nodata`` may not read assets: the page
must ask the auth manager, not only check that someone is logged in."""

from __future__ import annotations

from airflow.api_fastapi.auth.managers.simple.simple_auth_manager import SimpleAuthManager


class NoAssetsForNodata(SimpleAuthManager):
    def is_authorized_asset(self, *, method, user, details=None) -> bool:
        if user.username == "nodata":
            return False
        return super().is_authorized_asset(method=method, user=user, details=details)
