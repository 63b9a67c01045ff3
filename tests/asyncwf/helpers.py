"""Running async test code from a sync test: asyncio.run, with the connections the
sync_to_async thread opened closed afterwards (a test database cannot be dropped under them)."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine
from typing import Any

from asgiref.sync import sync_to_async
from django.db import connections


def arun(coroutine: Coroutine[Any, Any, Any]) -> Any:
    """Run `coroutine` on a new event loop; its result."""

    async def main() -> Any:
        try:
            return await coroutine
        finally:
            await sync_to_async(connections.close_all, thread_sensitive=True)()

    return asyncio.run(main())
