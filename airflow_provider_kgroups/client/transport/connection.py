"""One TCP (or TLS) connection to one broker.

It frames requests, pipelines them (up to ``max_in_flight_per_connection`` in flight, matched
back by correlation id; a request's timeout runs from when it is written),
negotiates API versions once per connection, and authenticates with SASL (and renews the
session before the broker would close it, KIP-368: :mod:`.authenticator`). It knows
nothing about groups, retries or deadlines: a request either gets its response or
raises (timeout, disconnect).

A response announcing a quota throttle (KIP-219, see :mod:`.throttle`) holds back every
request not yet written until the throttle ends, and a request's timeout starts when it is
written; requests already written get the throttle time added to their timeout.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import ssl
import struct
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from .. import stepmarks
from ..config import BrokerAddress, ClientConfig
from ..deadline import current_deadline
from ..errors import (
    AuthenticationError,
    BrokerDisconnected,
    BrokerThrottled,
    ErrorCode,
    KafkaGroupsError,
    ProtocolError,
    RequestTimeout,
    ResponseTooLarge,
    error_name,
)
from ..protocol import (
    CLIENT_MAX_VERSIONS,
    RESPONSE_FOR,
    ApiMessage,
    ApiVersionsRequest,
    warmup,
)
from ..wire import decoder_for
from .throttle import throttle_seconds

if TYPE_CHECKING:  # SASL's modules (hashlib, hmac, the mechanisms) load only for a SASL connection
    from .authenticator import SaslAuthenticator

log = logging.getLogger(__name__)

_SIZE = struct.Struct(">i")
_CORRELATION = struct.Struct(">i")
_DISCARD_CHUNK = 1024 * 1024

#: Called after every request: (node_id, api name, version, seconds, error or None).
Observer = Callable[[int, str, int, float, BaseException | None], None]


#: requests that change groups' offsets (OffsetCommit, DeleteGroups, OffsetDelete): a step boundary
#: for the kill tests once written (:mod:`..stepmarks`)
_CHANGES = frozenset({8, 42, 47})


class _Pending:
    __slots__ = ("decode", "expires", "future", "response_cls", "version")

    def __init__(
        self, future: asyncio.Future[Any], response_cls: type[Any], version: int, expires: float
    ) -> None:
        self.future = future
        self.response_cls = response_cls
        self.version = version
        self.expires = expires  # monotonic; pushed back by throttles announced while in flight
        self.decode = decoder_for(response_cls, version)


class BrokerConnection:
    def __init__(
        self, node_id: int, address: BrokerAddress, config: ClientConfig, observer: Observer | None = None
    ) -> None:
        self.node_id = node_id
        self.address = address
        self._config = config
        self._observer = observer
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._read_task: asyncio.Task[None] | None = None
        self._pending: dict[int, _Pending] = {}
        self._throttled_until = 0.0  # monotonic: nothing is written before
        self.failed_at: float | None = None  # monotonic: when a timeout or a broken read ended it
        self._correlation_ids = itertools.count(1)
        self._last_correlation_id = 0
        self._closed = False
        self._slots = asyncio.Semaphore(config.max_in_flight_per_connection)
        self.api_versions: dict[int, tuple[int, int]] = {}
        self.authenticator: SaslAuthenticator | None = None
        if config.uses_sasl:
            from .authenticator import SaslAuthenticator

            self.authenticator = SaslAuthenticator(config, address)
        self._reauth_task: asyncio.Task[None] | None = None

    def __repr__(self) -> str:
        return f"BrokerConnection(node={self.node_id}, {self.address})"

    @property
    def connected(self) -> bool:
        return self._writer is not None and not self._closed

    @property
    def in_flight(self) -> int:
        return len(self._pending)

    @property
    def throttled_for(self) -> float:
        """Seconds until the broker's quota throttle ends (0: not throttled)."""
        return max(0.0, self._throttled_until - time.monotonic())

    # -- lifecycle ---------------------------------------------------------------------------

    async def connect(self) -> None:
        """Open the socket, negotiate versions, authenticate. Bounded by the connect timeout."""
        try:
            if (
                self.authenticator is not None
            ):  # a token first, within the connect timeout and the call's deadline
                outer = current_deadline()
                ends = time.monotonic() + self._config.connect_timeout_s
                await self.authenticator.prepare(min(ends, outer.at) if outer is not None else ends)
            await asyncio.wait_for(self._connect(), self._config.connect_timeout_s)
        except TimeoutError:
            await self.close()
            raise RequestTimeout(
                f"connecting to broker {self.address} took over {self._config.connect_timeout_s:g}s"
            ) from None
        except BaseException:
            await self.close()
            raise

    async def _connect(self) -> None:
        ssl_context = self._config.ssl_context()
        try:
            self._reader, self._writer = await asyncio.open_connection(
                self.address.host,
                self.address.port,
                ssl=ssl_context,
                server_hostname=self.address.host if ssl_context else None,
            )
        except ssl.SSLCertVerificationError as exc:
            # A certificate the client does not trust is not fixed by retrying or by another broker.
            raise AuthenticationError(
                f"TLS certificate verification of broker {self.address} failed: {exc.verify_message or exc}"
            ) from None
        except OSError as exc:
            raise BrokerDisconnected(
                f"cannot connect to broker {self.address}: {exc.strerror or exc}"
            ) from None
        self._read_task = asyncio.get_running_loop().create_task(self._read_responses())
        await self._negotiate_versions()
        if self.authenticator is not None:
            await self.authenticator.authenticate(self._send, self._sasl_version())

    async def close(self) -> None:
        if self._closed:
            return
        self._closed = True
        self._fail_pending(
            BrokerDisconnected(f"connection to broker {self.address} closed", request_sent=True)
        )
        if self._read_task is not None and self._read_task is not asyncio.current_task():
            self._read_task.cancel()
        if self._writer is not None:
            self._writer.close()
            try:
                await asyncio.wait_for(self._writer.wait_closed(), 1.0)
            except (Exception, asyncio.CancelledError):  # noqa: BLE001 - closing is best effort
                pass

    # -- versions ----------------------------------------------------------------------------

    async def _negotiate_versions(self) -> None:
        request = ApiVersionsRequest(client_software_name="kgroups", client_software_version="0.1.0")
        version = CLIENT_MAX_VERSIONS[ApiVersionsRequest]
        warmup.want(
            ApiVersionsRequest, version, next_up=True
        )  # its decoder, compiled while the broker answers
        response = await self.send(request, version, self._config.connect_timeout_s)
        if response.error_code == ErrorCode.UNSUPPORTED_VERSION:
            # The broker answered at v0 with what it supports; ask again within its range.
            ours = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}
            _lo, hi = ours.get(ApiVersionsRequest.API_KEY, (0, 0))
            response = await self.send(ApiVersionsRequest(), min(hi, version), self._config.connect_timeout_s)
        if response.error_code:
            raise ProtocolError(
                f"broker {self.address} refused ApiVersions: {error_name(response.error_code)}"
            )
        self.api_versions = {k.api_key: (k.min_version, k.max_version) for k in response.api_keys}

    def version_for(self, request_cls: type[ApiMessage]) -> int | None:
        """The highest version both sides speak, or None if the broker lacks the API."""
        theirs = self.api_versions.get(request_cls.API_KEY)
        if theirs is None:
            return None
        best = min(theirs[1], CLIENT_MAX_VERSIONS[request_cls])
        return best if best >= theirs[0] else None

    # -- SASL ------------------------------------------------------------------------------

    def _sasl_version(self) -> int:
        from ..protocol import SaslAuthenticateRequest, SaslHandshakeRequest  # built on first use

        if (self.version_for(SaslHandshakeRequest) or 0) < 1:
            raise AuthenticationError(f"broker {self.address} does not support SaslHandshake v1+")
        return self.version_for(SaslAuthenticateRequest) or 0

    async def _reauthenticate(self) -> None:
        """Renew the SASL session before this caller's request is written (KIP-368); every caller
        due meanwhile waits for the same renewal. A failure closes the connection: the caller's
        request was not sent, so it is safe to send elsewhere."""
        task = self._reauth_task
        if task is None or task.done():
            task = self._reauth_task = asyncio.get_running_loop().create_task(self._run_reauth())
        await asyncio.shield(task)

    async def _run_reauth(self) -> None:
        from .authenticator import ReauthRefused

        assert self.authenticator is not None
        try:
            await self.authenticator.authenticate(self._send, self._sasl_version(), reauth=True)
        except AuthenticationError:
            await self.close()
            raise
        except (ReauthRefused, KafkaGroupsError, OSError) as exc:
            await self.close()
            raise BrokerDisconnected(
                f"SASL re-authentication with broker {self.address} failed ({exc}): "
                "the connection is replaced",
                request_sent=False,
            ) from None

    # -- requests ----------------------------------------------------------------------------

    async def send(
        self, request: ApiMessage, version: int, timeout: float, deadline: float | None = None
    ) -> ApiMessage:
        """Send one request and wait for its response (other requests may be in flight).

        At most ``max_in_flight_per_connection`` requests are written before the earliest is
        answered: a broker handles a connection's requests one at a time, so an unbounded
        pipeline would count its time on every earlier request against the later ones.
        ``timeout`` counts from the moment the request is written (after a free slot and any
        quota throttle); ``deadline`` (monotonic): raise :class:`BrokerThrottled` at once,
        sending nothing, if the throttle lasts beyond it.
        """
        async with self._slots:
            await self._wait_out_throttle(request, version, deadline)
            if self.authenticator is not None and self.authenticator.reauth_due() and not self._closed:
                await self._reauthenticate()
            return await self._send(request, version, timeout)

    async def _send(self, request: ApiMessage, version: int, timeout: float) -> ApiMessage:
        if self._closed or self._writer is None:
            raise BrokerDisconnected(f"connection to broker {self.address} is closed")
        correlation_id = self._last_correlation_id = next(self._correlation_ids)
        request.with_header(correlation_id=correlation_id, client_id=self._config.client_id)
        frame = request.encode(version=version, header=True, framed=True)
        future = asyncio.get_running_loop().create_future()
        started = time.monotonic()
        pending = _Pending(future, RESPONSE_FOR[request.API_KEY], version, started + timeout)
        self._pending[correlation_id] = pending
        error: BaseException | None = None
        try:
            self._writer.write(frame)
            warmup.written()
            if request.API_KEY in _CHANGES:
                stepmarks.reached("change_sent")
            while not future.done():
                left = pending.expires - time.monotonic()
                if left <= 0:
                    raise TimeoutError
                await asyncio.wait((future,), timeout=left)
            try:
                return future.result()
            except BrokerDisconnected as exc:
                # Name the request and its size: a broker closes the connection on a request
                # over its socket.request.max.bytes, and says nothing else.
                raise BrokerDisconnected(
                    f"{exc} while {request.name} v{version} of {len(frame) - 4} bytes was in flight",
                    request_sent=exc.request_sent,
                ) from None
        except TimeoutError:
            error = RequestTimeout(
                f"{request.name} v{version} to broker {self.address} got no response within {timeout:.3g}s",
                request_sent=True,
            )
            future.cancel()  # nobody waits for it any more: closing must not fail it unobserved
            # Like the Java client: a timed-out connection is not trusted with more requests.
            self.failed_at = time.monotonic()
            await self.close()
            raise error from None
        except BaseException as exc:
            error = exc
            raise
        finally:
            self._pending.pop(correlation_id, None)
            if self._observer is not None:
                self._observer(
                    self.node_id,
                    request.name.removesuffix("Request"),
                    version,
                    time.monotonic() - started,
                    error,
                )

    async def _wait_out_throttle(self, request: ApiMessage, version: int, deadline: float | None) -> None:
        while (wait := self._throttled_until - time.monotonic()) > 0 and not self._closed:
            if deadline is not None and self._throttled_until > deadline:
                raise BrokerThrottled(
                    f"broker {self.address} throttles this client (quota) for {wait * 1000:.0f} ms "
                    f"more, past the deadline: {request.name} v{version} not sent"
                )
            await asyncio.sleep(wait)

    def _throttle(self, seconds: float) -> None:
        """A response announced a quota throttle: hold back new requests, and do not count the
        throttle against the requests already written (InFlightRequests.incrementThrottleTime)."""
        self._throttled_until = max(self._throttled_until, time.monotonic() + seconds)
        for pending in self._pending.values():
            pending.expires += seconds
        log.debug("broker %s throttles this client for %.0f ms", self.address, seconds * 1000)

    async def _read_responses(self) -> None:
        reader = self._reader
        assert reader is not None
        try:
            while True:
                size = _SIZE.unpack(await reader.readexactly(4))[0]
                if size > self._config.max_response_bytes and size >= _CORRELATION.size:
                    await self._refuse_frame(reader, size)
                    continue
                if not size > 0:
                    raise ProtocolError(f"broker {self.address} sent a frame of {size} bytes")
                body = await reader.readexactly(size)
                correlation_id = _CORRELATION.unpack_from(body)[0]
                entry = self._pending.get(correlation_id)
                if entry is None:
                    continue  # a response to a request that already timed out
                future, response_cls, version = entry.future, entry.response_cls, entry.version
                if future.done():
                    continue
                try:
                    response = entry.decode(body)
                except Exception as exc:  # noqa: BLE001 - a bad body fails that request, not the loop
                    future.set_exception(
                        ProtocolError(
                            f"cannot decode {response_cls.__name__} v{version} from broker {self.address}: {exc}"
                        )
                    )
                    continue
                future.set_result(response)
                throttle = throttle_seconds(response_cls.API_KEY, version, response)
                if throttle > 0:
                    self._throttle(throttle)
        except (asyncio.IncompleteReadError, ConnectionError, OSError) as exc:
            now = time.monotonic()
            reason = "closed the connection" if isinstance(exc, asyncio.IncompleteReadError) else str(exc)
            if self.authenticator is not None and self.authenticator.may_have_expired(now):
                # SocketServer closes an expired session's channel at its next request without
                # processing it, after answering every earlier one: nothing unanswered was done.
                self._fail_pending(
                    BrokerDisconnected(
                        f"broker {self.address} {reason} after the SASL session had expired (KIP-368); the "
                        "requests it had not answered were not processed",
                        request_sent=False,
                    )
                )
            else:
                self.failed_at = now
                self._fail_pending(BrokerDisconnected(f"broker {self.address} {reason}", request_sent=True))
        except ProtocolError as exc:
            self.failed_at = time.monotonic()
            self._fail_pending(exc)
        except asyncio.CancelledError:
            return
        self._closed = True
        if self._writer is not None:
            self._writer.close()

    async def _refuse_frame(self, reader: asyncio.StreamReader, size: int) -> None:
        """A response over ``max_response_bytes`` fails its request alone; its bytes are read and
        dropped, so the connection and the other requests on it carry on. A frame that answers
        no request of ours is garbage (not Kafka on that port): the connection ends."""
        correlation_id = _CORRELATION.unpack(await reader.readexactly(_CORRELATION.size))[0]
        if not 0 < correlation_id <= self._last_correlation_id:
            raise ProtocolError(f"broker {self.address} sent a frame of {size} bytes answering no request")
        entry = self._pending.get(correlation_id)  # None: the request gave up waiting already
        if entry is not None and not entry.future.done():
            future, response_cls, version = entry.future, entry.response_cls, entry.version
            limit = self._config.max_response_bytes
            api = response_cls.__name__.removesuffix("Response")
            future.set_exception(
                ResponseTooLarge(
                    f"{api} v{version} response from broker {self.address} is {size} bytes, over "
                    f"max_response_bytes ({limit})",
                    size=size,
                    limit=limit,
                )
            )
        remaining = size - _CORRELATION.size
        while remaining > 0:
            remaining -= len(await reader.readexactly(min(remaining, _DISCARD_CHUNK)))

    def _fail_pending(self, error: BaseException) -> None:
        """Fail every request in flight: each was written, so its fate on the broker is unknown."""
        for pending in list(self._pending.values()):
            if not pending.future.done():
                pending.future.set_exception(error)
        self._pending.clear()
