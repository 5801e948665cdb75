"""Small pieces shared by the service's pure-ASGI middleware (metrics, audit)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:  # `haygraph audit` and `serve --help` read this module without the web stack
    from starlette.types import Message, Send


class StatusRecorder:
    """An ASGI `send` that passes every message on and remembers the response's status code.

    `status` is 500 until the response starts, so a request whose app raised before answering counts
    as a server error.
    """

    def __init__(self, send: Send) -> None:
        self.send = send
        self.status = 500

    async def __call__(self, message: Message) -> None:
        """Note the status of ``http.response.start``, then send `message` on."""
        if message["type"] == "http.response.start":
            self.status = int(message["status"])
        await self.send(message)
