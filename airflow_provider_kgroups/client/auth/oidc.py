"""The OAuth 2 client-credentials grant, as Kafka's ``HttpAccessTokenRetriever`` (KIP-768) does it.

A POST to the token endpoint with ``grant_type=client_credentials`` (and ``scope`` when set),
the client id and secret as HTTP Basic authentication (``base64(id:secret)``, the standard,
not URL-safe, alphabet: KAFKA-14496), ``Accept: application/json`` and ``Cache-Control:
no-cache``; the ``access_token`` of a 200 or 201 answer is the token.

Failures, as ``HttpAccessTokenRetriever.UNRETRYABLE_HTTP_CODES`` and ``Retry``: 400, 401, 403,
404 and the other client errors in that set are an :class:`AuthenticationError` at once (bad
credentials are not fixed by asking again); a 5xx, 408, 429, a refused connection or a timeout
is retried with exponential backoff (``sasl.login.retry.backoff.ms`` doubling up to
``sasl.login.retry.backoff.max.ms``) until the deadline, then :class:`TokenUnavailable`
names the endpoint. Each attempt is bounded by ``sasl.login.connect.timeout.ms`` /
``sasl.login.read.timeout.ms`` and by what is left of the deadline. Messages carry the
endpoint (without query or user info) and the provider's ``error``/``error_description``,
never the secret, the Authorization header or a token.
"""

from __future__ import annotations

import base64
import logging
import time
from typing import TYPE_CHECKING
from urllib.parse import urlencode

from ..errors import AuthenticationError, TokenUnavailable
from .config import OAuthBearerConfig, endpoint_name

if TYPE_CHECKING:
    import requests

log = logging.getLogger(__name__)

UNRETRYABLE_HTTP_CODES = frozenset(
    {400, 401, 402, 403, 404, 405, 406, 407, 409, 410, 411, 412, 413, 414, 415, 501, 505}
)
_MAX_DESCRIPTION = 300


def authorization_header(client_id: str, client_secret: str) -> str:
    """HttpAccessTokenRetriever.formatAuthorizationHeader."""
    return "Basic " + base64.b64encode(f"{client_id.strip()}:{client_secret.strip()}".encode()).decode(
        "ascii"
    )


def request_body(scope: str | None) -> str:
    """HttpAccessTokenRetriever.formatRequestBody."""
    fields = {"grant_type": "client_credentials"}
    if scope and scope.strip():
        fields["scope"] = scope.strip()
    return urlencode(fields)


def _provider_error(response: requests.Response) -> str:
    """The provider's ``error`` and ``error_description`` (RFC 6749 5.2), shortened; else nothing."""
    try:
        body = response.json()
    except ValueError:
        return ""
    if not isinstance(body, dict):
        return ""
    error = body.get("error") or body.get("errorCode")
    description = body.get("error_description") or body.get("errorSummary")
    text = " - ".join(str(x) for x in (error, description) if x)
    return f" ({text[:_MAX_DESCRIPTION]})" if text else ""


def fetch_access_token(
    config: OAuthBearerConfig,
    deadline: float,
    *,
    connect_timeout_s: float,
    read_timeout_s: float,
    session: requests.Session | None = None,
) -> str:
    """The access token from ``config.token_endpoint_url`` (``deadline``: ``time.monotonic()``)."""
    import requests

    url = str(config.token_endpoint_url).strip()
    shown = endpoint_name(url)
    headers = _request_headers(config)
    body = request_body(config.scope)
    post = session.post if session is not None else requests.post
    started = time.monotonic()
    attempt, last = 0, "no attempt was made"
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            break
        attempt += 1
        timeout = (max(0.001, min(connect_timeout_s, left)), max(0.001, min(read_timeout_s, left)))
        try:
            response = post(url, data=body, headers=headers, timeout=timeout, allow_redirects=False)
        except requests.Timeout:
            last = f"no answer within {timeout[1]:g} s"
        except requests.ConnectionError as exc:
            last = f"cannot connect ({type(exc).__name__})"
        except requests.RequestException as exc:
            last = f"{type(exc).__name__}"
        else:
            if response.status_code in (200, 201):
                return _access_token(response, shown)
            last = _refused(response, shown, config)
        if not _wait_to_retry(config, deadline, attempt, shown, last):
            break
    raise TokenUnavailable(
        f"token endpoint {shown} gave no token in {time.monotonic() - started:.1f} s "
        f"({attempt} attempt(s)); last: {last}"
    )


def _request_headers(config: OAuthBearerConfig) -> dict[str, str]:
    return {
        "Authorization": authorization_header(config.client_id or "", config.client_secret or ""),
        "Accept": "application/json",
        "Cache-Control": "no-cache",
        "Content-Type": "application/x-www-form-urlencoded",
    }


def _refused(response: requests.Response, shown: str, config: OAuthBearerConfig) -> str:
    """What an answer without a token says, to retry; an :class:`AuthenticationError` when
    retrying cannot fix it (:data:`UNRETRYABLE_HTTP_CODES`)."""
    status = response.status_code
    if status in UNRETRYABLE_HTTP_CODES:
        raise AuthenticationError(
            f"token endpoint {shown} refused the client credentials of client {config.client_id!r}: "
            f"HTTP {status}{_provider_error(response)}; retrying cannot fix this: check the client id, "
            "secret and scope."
        )
    return f"HTTP {status}{_provider_error(response)}"


def _wait_to_retry(config: OAuthBearerConfig, deadline: float, attempt: int, shown: str, last: str) -> bool:
    """Logs the failed attempt and sleeps the backoff; False when the deadline leaves no time."""
    wait = min(
        config.retry_backoff_s * 2 ** (attempt - 1),
        config.retry_backoff_max_s,
        deadline - time.monotonic(),
    )
    log.warning(
        "Token endpoint %s attempt %d failed: %s; %s",
        shown,
        attempt,
        last,
        f"retrying in {wait * 1000:.0f} ms" if wait > 0 else "no time left",
    )
    if wait <= 0:
        return False
    time.sleep(wait)
    return True


def _access_token(response: requests.Response, shown: str) -> str:
    try:
        body = response.json()
    except ValueError:
        raise AuthenticationError(
            f"token endpoint {shown} answered {response.status_code} with a body that is not JSON."
        ) from None
    token = body.get("access_token") if isinstance(body, dict) else None
    if not isinstance(token, str) or not token.strip():
        keys = ", ".join(sorted(map(str, body))) if isinstance(body, dict) else type(body).__name__
        raise AuthenticationError(
            f"token endpoint {shown} answered without an access_token (it sent: {keys})."
        )
    return token
