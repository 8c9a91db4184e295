"""Sockets and bytes: one connection per broker, framing, pipelining, auth. No policy lives here."""

from .connection import BrokerConnection
from .pool import ConnectionPool, RequestObserver, RequestStats

__all__ = ["BrokerConnection", "ConnectionPool", "RequestObserver", "RequestStats"]
