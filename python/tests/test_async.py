"""pocketdock.async_: runs overlap; cancelling a task kills its command."""

from __future__ import annotations

import asyncio
import time

import pocketdock.async_ as pda


def test_16_one_second_runs_over_4_sandboxes_overlap() -> None:
    async def main() -> float:
        boxes = await asyncio.gather(*(pda.create_new_container(profile="minimal") for _ in range(4)))
        try:
            start = time.monotonic()
            results = await asyncio.gather(*(boxes[i % 4].run("sleep 1") for i in range(16)))
            elapsed = time.monotonic() - start
            assert all(r.ok for r in results)
            return elapsed
        finally:
            await asyncio.gather(*(b.shutdown() for b in boxes))

    elapsed = asyncio.run(main())
    assert elapsed < 3.0, f"took {elapsed:.2f}s"


def test_cancelling_a_task_kills_its_process_tree() -> None:
    async def main() -> str:
        async with await pda.create_new_container(profile="minimal") as c:
            task = asyncio.ensure_future(c.run("sh -c 'sleep 60' & sleep 60"))
            await asyncio.sleep(0.5)
            task.cancel()
            try:
                await task
            except asyncio.CancelledError:
                pass
            await asyncio.sleep(0.5)
            return (await c.run("ps -o args")).stdout

    assert "sleep 60" not in asyncio.run(main())


def test_an_async_stream_yields_chunks() -> None:
    async def main() -> str:
        async with await pda.create_new_container(profile="minimal") as c:
            out = ""
            async for chunk in c.run("echo a; echo b", stream=True):
                out += chunk.data
            return out

    assert asyncio.run(main()) == "a\nb\n"
