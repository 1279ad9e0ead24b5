"""Streaming: chunks as they arrive, then the result; the same, async."""

import asyncio

import pocketdock
import pocketdock.async_

with pocketdock.create_new_container(profile="minimal") as c:
    stream = c.run("for i in 1 2 3; do echo line $i; sleep 0.1; done", stream=True)
    for chunk in stream:
        print(f"[{chunk.stream}] {chunk.data}", end="")  # text; chunk.raw has the bytes
    assert stream.exit_code == 0


async def main() -> None:
    async with await pocketdock.async_.create_new_container(profile="minimal") as c:
        got = ""
        async for chunk in c.run("echo async one; echo async two", stream=True):
            got += chunk.data
        assert got == "async one\nasync two\n", got
        # Four runs at once on one sandbox.
        results = await asyncio.gather(*(c.run(f"sleep 0.5; echo {i}") for i in range(4)))
        assert [r.stdout for r in results] == ["0\n", "1\n", "2\n", "3\n"]


asyncio.run(main())
print("streaming: ok")
