"""Graceful shutdown of `haygraph serve` for a load balancer: readiness first, then drain, then exit 0.

On SIGTERM (or Ctrl-C):

1. `/readyz` answers 503 `shutting_down` at once; requests are still accepted and served for
   `drain_delay_s` seconds, the time a load balancer's readiness probe needs to take the instance
   out of rotation (`--drain-delay`, default 0);
2. the listening socket closes (new connections are refused) and idle keep-alive connections are
   closed; in-flight requests and streams go on for up to `shutdown_grace_s` (default: the request
   deadline);
3. when the grace has passed, running turns are stopped: an ask gets 503 `shutting_down`, a stream
   ends with a final `error` event of that type (chat completions: the error chunk, no `[DONE]`);
4. the thread store is flushed and closed, and the process exits with status 0 — without waiting for
   worker threads still blocked in a stopped turn's model call (they can no longer change anything).

A second signal skips the waiting (uvicorn's force exit).
"""

from __future__ import annotations

import asyncio
import logging
import os
import signal
import socket
import sys
import time
from types import FrameType

import uvicorn

from haygraph.adapters.service.connections import header_deadline_protocol
from haygraph.adapters.service.service import HaygraphService

logger = logging.getLogger(__name__)

UVICORN_MARGIN_S = 5.0
"""uvicorn cancels whatever still runs this long after the grace (the turns have stopped by then)."""


class GracefulServer(uvicorn.Server):
    """uvicorn's server with the drain sequence above; exits 0 on SIGTERM/SIGINT."""

    def __init__(self, config: uvicorn.Config, service: HaygraphService) -> None:
        super().__init__(config)
        self.service = service
        self._close_at: float | None = None

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        """First signal: readiness false, close the port after the drain delay. Second: force exit."""
        if self.service.draining:
            self.force_exit = True
            self.should_exit = True
            return
        self.service.draining = True
        delay = self.service.settings.drain_delay_s
        self._close_at = time.monotonic() + delay
        name = signal.Signals(sig).name if sig in set(signal.Signals) else str(sig)
        logger.warning(
            "%s: draining — /readyz is 503 now, the port closes in %g s, in-flight requests then have %g s",
            name,
            delay,
            self.service.settings.grace_s,
        )

    async def serve(self, sockets: list[socket.socket] | None = None) -> None:
        """Serve; after a shutdown that stopped turns, exit at once (see the module docstring)."""
        await super().serve(sockets)
        if self.service.stopping.is_set() or self.force_exit:
            logger.warning("shut down; not waiting for worker threads of stopped turns")
            logging.shutdown()
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(0)

    async def on_tick(self, counter: int) -> bool:
        """Close the port once the drain delay has passed; arm the grace timer that stops turns."""
        if self._close_at is not None and not self.should_exit and time.monotonic() >= self._close_at:
            self.should_exit = True
            asyncio.get_running_loop().call_later(self.service.settings.grace_s, self.service.stop_turns)
        return await super().on_tick(counter)


def server_config(app: object, service: HaygraphService, *, log_level: str = "warning") -> uvicorn.Config:
    """The uvicorn settings of the service: keep-alive, header and graceful-shutdown bounds."""
    s = service.settings
    return uvicorn.Config(
        app,  # type: ignore[arg-type]
        host=s.host,
        port=s.port,
        log_level=log_level,
        access_log=False,
        timeout_keep_alive=5,  # an idle keep-alive connection is closed after 5 s
        timeout_graceful_shutdown=int(s.grace_s + UVICORN_MARGIN_S),
        http=header_deadline_protocol(s.body_timeout_s),  # headers within --body-timeout too
    )
