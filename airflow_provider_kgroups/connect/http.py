"""The HTTP transport for the Connect REST API: a ``requests`` session whose retries are
urllib3's :class:`Retry`, bound to the caller's deadline.

urllib3's ``Retry`` does the job (statuses to retry, exponential backoff, ``Retry-After`` on
429/503) except for one thing: it knows no deadline, so a ``Retry-After: 600`` or a long
backoff would sleep past the caller's. :class:`DeadlineRetry` adds exactly that: a retry
whose wait, plus the attempt after it, would end past the deadline is not made, and the
last answer (say the 503) is returned for the caller to judge. Each request's timeout is
``min(timeout_s, time left)``, so the read as a whole ends inside the deadline.
"""

from __future__ import annotations

import time
from typing import Any

import requests
from requests.adapters import HTTPAdapter
from urllib3.exceptions import MaxRetryError, ResponseError
from urllib3.util.retry import Retry

from ..client.errors import ConfigurationError
from .config import ConnectClusterConfig

#: 429 Too Many Requests and every 5xx: Connect answers 500 for an internal error and 503/504
#: behind gateways while a worker restarts.
RETRY_STATUSES = frozenset({429, *range(500, 600)})
USER_AGENT = "airflow-provider-kgroups (Kafka Connect evidence)"


class DeadlineRetry(Retry):
    """``Retry`` that never sleeps or retries past ``deadline`` (a ``time.monotonic()`` value)."""

    def __init__(
        self, *args: Any, deadline: float | None = None, attempt_s: float = 0.0, **kwargs: Any
    ) -> None:
        super().__init__(*args, **kwargs)
        self.deadline = deadline
        self.attempt_s = attempt_s

    def new(self, **kw: Any) -> DeadlineRetry:
        new = super().new(**kw)
        new.deadline, new.attempt_s = self.deadline, self.attempt_s
        return new

    def _wait(self, response) -> float:
        if self.respect_retry_after_header and response is not None:
            retry_after = self.get_retry_after(response)
            if retry_after:
                return retry_after
        return self.get_backoff_time()

    def increment(self, method=None, url=None, response=None, error=None, _pool=None, _stacktrace=None):
        new = super().increment(method, url, response, error, _pool, _stacktrace)
        if self.deadline is not None:
            wait = new._wait(response)
            # the next attempt needs at least a short while to be worth making
            if time.monotonic() + wait + min(self.attempt_s, 1.0) > self.deadline:
                cause = error or ResponseError(f"no retry: waiting {wait:g} s would pass the deadline")
                raise MaxRetryError(_pool, url, cause) from cause
        return new


def open_session(config: ConnectClusterConfig, deadline: float) -> requests.Session:
    """A session for one read of one Connect cluster, under ``deadline`` (monotonic)."""
    session = requests.Session()
    retry = DeadlineRetry(
        total=config.retries,
        connect=config.retries,
        read=config.retries,
        status=config.retries,
        redirect=3,
        other=0,
        allowed_methods=frozenset({"GET"}),
        status_forcelist=RETRY_STATUSES,
        backoff_factor=config.backoff_s,
        backoff_max=max(config.backoff_s * 8, config.backoff_s),
        respect_retry_after_header=True,
        raise_on_status=False,
        deadline=deadline,
        attempt_s=config.timeout_s,
    )
    adapter = HTTPAdapter(max_retries=retry, pool_connections=1, pool_maxsize=1)
    session.mount("http://", adapter)
    session.mount("https://", adapter)
    session.headers.update({"Accept": "application/json", "User-Agent": USER_AGENT})
    if config.uses_auth:
        if config.username is None or config.password is None:  # create() sets both or neither
            raise ConfigurationError("Kafka Connect basic auth needs both a user and a password.")
        session.auth = (config.username, config.password)
    # verify goes on each request, not on the session: requests lets REQUESTS_CA_BUNDLE /
    # CURL_CA_BUNDLE override a session's verify (psf/requests#3829), never a request's
    return session


def request_timeout(config: ConnectClusterConfig, deadline: float) -> float:
    """``timeout_s`` or what is left of the deadline, whichever is shorter (raises if none is left)."""
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError("the deadline passed before the request")
    return min(config.timeout_s, left)
