"""Hello: a sandbox for the length of a `with` block, one command, its result."""

import pocketdock

with pocketdock.create_new_container(profile="minimal") as c:
    r = c.run("echo hello from $(hostname)")
    print(r.stdout, end="")
    assert r.ok and r.exit_code == 0 and not r.timed_out
    py = c.run("print(6 * 7)", lang="python", timeout=10)
    assert py.stdout == "42\n", py
    slow = c.run("sleep 5", timeout=0.5)
    assert slow.timed_out and not slow.ok
print("hello: ok")
