"""Things that hold something open (an MCP server's process, the tools of a bot) and close as context managers."""

from __future__ import annotations

import asyncio
from typing import Any


class Closing:
    """``close()`` on leaving a ``with`` block, ``aclose()`` on leaving an ``async with`` block (by default
    ``close()`` in a worker thread, so the event loop never blocks on it). Subclasses write ``close``."""

    def close(self) -> None:
        raise NotImplementedError

    async def aclose(self) -> None:
        await asyncio.to_thread(self.close)

    def __enter__(self) -> Any:
        return self

    def __exit__(self, *exc_info: Any) -> None:
        self.close()

    async def __aenter__(self) -> Any:
        return self

    async def __aexit__(self, *exc_info: Any) -> None:
        await self.aclose()
