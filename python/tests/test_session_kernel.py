"""Sessions keep shell state; the kernel keeps variables."""

from __future__ import annotations

import pocketdock


def test_a_session_keeps_its_state(sb: pocketdock.Container) -> None:
    with sb.session() as sh:
        sh.send_and_wait("cd /tmp && export X=7")
        r = sh.send_and_wait("echo $X; pwd")
        assert r.stdout == "7\n/tmp\n" and r.ok
    assert not sh.is_alive()


def test_the_kernel_keeps_variables(sb: pocketdock.Container) -> None:
    k = sb.kernel()
    k.exec("x = [1, 2, 3]")
    r = k.exec("sum(x)")
    assert r.result == "6" and r.ok
    assert k.var("x") == [1, 2, 3]
    assert [v.name for v in k.vars()] == ["x"]
    bad = k.exec("1/0")
    assert not bad.ok and "ZeroDivisionError" in (bad.error or "")
    k.close()
