"""A pool: warm sandboxes handed out at once, given back, removed at the end."""

import time

import pocketdock

with pocketdock.ContainerPool(size=2, profile="minimal") as pool:
    for task in range(4):
        start = time.monotonic()
        c = pool.acquire()
        took = (time.monotonic() - start) * 1000
        r = c.run(f"echo task {task}")
        print(f"{r.stdout.strip()} on {c.name} (acquired in {took:.0f} ms)")
        assert r.ok
        pool.release(c)
print("pool: ok")
