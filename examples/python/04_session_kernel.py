"""A session keeps shell state; the kernel keeps Python variables."""

import pocketdock

with pocketdock.create_new_container(profile="minimal") as c:
    with c.session() as sh:
        sh.send_and_wait("cd /tmp && export GREETING=hi")
        r = sh.send_and_wait('echo "$GREETING from $(pwd)"')
        print(r.stdout, end="")
        assert r.stdout == "hi from /tmp\n"

    with c.kernel() as k:
        k.exec("import statistics\nscores = [3, 5, 7]")
        mean = k.exec("statistics.mean(scores)")
        print("mean:", mean.result)
        assert mean.result == "5"
        assert k.var("scores") == [3, 5, 7]
        assert [v.name for v in k.vars()] == ["scores"]
        failed = k.exec("scores[10]")
        assert not failed.ok and "IndexError" in (failed.error or "")
print("session and kernel: ok")
