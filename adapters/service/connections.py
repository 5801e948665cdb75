"""A deadline for a request's line and headers: uvicorn's h11 protocol waits for them forever.

uvicorn closes an idle keep-alive connection after `timeout_keep_alive`, but any byte received cancels
that timer, so a client that sends its headers one byte at a time (or opens a connection and sends
part of a request) holds the connection and its file descriptor for as long as it likes.
`HeaderDeadlineProtocol` closes a connection whose request line and headers are not complete within
`header_timeout_s` of the connection opening or of the previous response ending. The body has its own
deadline (`admission.LoadControlMiddleware`, `--body-timeout`); the response writes theirs
(`--send-timeout`).
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

logger = logging.getLogger(__name__)


class HeaderDeadlineProtocol(H11Protocol):
    """uvicorn's h11 protocol with a deadline for each request's line and headers."""

    header_timeout_s = 10.0

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._header_timer: asyncio.TimerHandle | None = None

    def _arm(self) -> None:
        self._disarm()
        self._header_timer = self.loop.call_later(self.header_timeout_s, self._header_deadline)

    def _disarm(self) -> None:
        if self._header_timer is not None:
            self._header_timer.cancel()
            self._header_timer = None

    def _header_deadline(self) -> None:
        self._header_timer = None
        if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
            logger.info("closing a connection that sent no complete request in %g s", self.header_timeout_s)
            self.transport.close()

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        """Start the header deadline of the first request."""
        super().connection_made(transport)
        self._arm()

    def on_response_complete(self) -> None:
        """Start the header deadline of the next request on this keep-alive connection."""
        super().on_response_complete()
        if not self.transport.is_closing():
            self._arm()

    def connection_lost(self, exc: Exception | None) -> None:
        """Drop the timer with the connection."""
        self._disarm()
        super().connection_lost(exc)


def header_deadline_protocol(header_timeout_s: float) -> type[HeaderDeadlineProtocol]:
    """A `HeaderDeadlineProtocol` class with the given deadline (uvicorn instantiates the class itself)."""
    return type("HeaderDeadlineProtocol", (HeaderDeadlineProtocol,), {"header_timeout_s": header_timeout_s})
