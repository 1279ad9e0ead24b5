"""Drive `pocketdock mcp` with the official MCP Python SDK's client.

Used by tests/integration/mcp.rs, with the `mcp` package that
scripts/provision.sh pins in the tests' virtualenv.

    client.py stdio PROJECT POCKETDOCK [SERVER-ARG...]   start the server itself
    client.py http URL TOKEN                             a server already listening
    client.py hold-stdio PROJECT POCKETDOCK [SERVER-ARG...]
    client.py hold-http URL TOKEN
    client.py hold-fork-stdio PROJECT POCKETDOCK [SERVER-ARG...]

The plain modes list the tools and call every one, checking what each
answers (and that each refusal says why); the hold modes only create one
sandbox (hold-fork: write a file in it, fork it once, and read the file
in the copy). Either way the client then prints one JSON line (the session id and
the sandboxes it left) and keeps the session open until a line (or the end)
arrives on stdin, so that the caller can look at the engine meanwhile. A
failed check exits non-zero with the reason.
"""

import asyncio
import json
import os
import sys

import anyio
import httpx2
from mcp import Client
from mcp.client.stdio import StdioServerParameters
from mcp.client.streamable_http import streamable_http_client

TOOLS = {
    "sandbox_create", "sandbox_fork", "sandbox_list", "sandbox_shutdown", "run_command",
    "run_python",
    "read_file", "write_file", "list_files", "push_files", "apply_manifest",
}


def text(result):
    return "\n".join(getattr(c, "text", "") for c in result.content)


async def ok(client, tool, **args):
    r = await client.call_tool(tool, args)
    assert not r.is_error, f"{tool}{args} failed: {text(r)}"
    assert isinstance(r.structured_content, dict), f"{tool}: no structured content: {r}"
    return r.structured_content


async def refused(client, tool, words, **args):
    r = await client.call_tool(tool, args)
    assert r.is_error, f"{tool}{args} should be refused: {r.structured_content}"
    for w in words:
        assert w in text(r), f"{tool}{args}: {w!r} not in {text(r)!r}"


async def every_tool(client):
    tools = (await client.list_tools()).tools
    assert {t.name for t in tools} == TOOLS, [t.name for t in tools]
    for t in tools:
        assert len(t.description or "") > 40, t.name
        assert t.input_schema.get("type") == "object", t.name

    a = await ok(client, "sandbox_create", profile="minimal", mem="128m", network="off")
    box, session = a["sandbox"], a["session"]
    assert a["mem_bytes"] == 128 << 20 and a["network"] == "off", a

    r = await ok(client, "run_command", sandbox=box, command="echo out; echo err >&2; exit 3")
    assert (r["stdout"], r["exit_code"]) == ("out\n", 3), r
    assert "err" in r["stderr"] and not r["timed_out"], r
    assert r["duration_ms"] >= 0 and r["peak_memory_bytes"] > 0, r
    assert r["cpu_user_ms"] is not None and r["cpu_system_ms"] is not None, r
    r = await ok(client, "run_command", command="sleep 20", timeout_s=1)
    assert r["timed_out"] and r["duration_ms"] < 10_000, r
    r = await ok(client, "run_command", command="yes | head -c 5000", max_output_bytes=10)
    assert r["truncated"] and len(r["stdout"]) <= 10, r
    r = await ok(client, "run_command", command="echo $GREETING", env={"GREETING": "hi"})
    assert r["stdout"] == "hi\n", r
    # A call the client cancels kills its command.
    with anyio.move_on_after(1):
        await client.call_tool("run_command", {"command": "sleep 30; echo late"})
    r = await ok(client, "run_command", command="sleep 1; ps -eo args")
    assert "sleep 30" not in r["stdout"], r

    r = await ok(client, "run_python", code="x = 6 * 7\nprint(x)")
    assert r["output"] == "42\n" and r["error"] is None, r
    assert {"name": "x", "type": "int", "summary": "42"} in r["variables"], r
    r = await ok(client, "run_python", sandbox=box, code="x + 1")
    assert r["result"] == "43", r
    r = await ok(client, "run_python", code="1 / 0")
    assert "ZeroDivisionError" in (r["error"] or ""), r

    w = await ok(client, "write_file", path="/tmp/mcp/hello.txt", content="hello from mcp\n")
    assert w["bytes"] == 15, w
    r = await ok(client, "read_file", path="/tmp/mcp/hello.txt")
    assert (r["content"], r["encoding"], r["size"]) == ("hello from mcp\n", "utf-8", 15), r
    r = await ok(client, "run_command", command="cat /tmp/mcp/hello.txt")
    assert r["stdout"] == "hello from mcp\n", r
    await ok(client, "write_file", path="/tmp/mcp/bin", content="AP8=", encoding="base64")
    r = await ok(client, "read_file", path="/tmp/mcp/bin")
    assert (r["content"], r["encoding"]) == ("AP8=", "base64"), r
    r = await ok(client, "list_files", path="/tmp/mcp")
    names = {e["name"]: e for e in r["entries"]}
    assert names["hello.txt"]["size"] == 15 and names["hello.txt"]["kind"] == "file", r

    r = await ok(client, "push_files", source="data/in.txt", destination="/tmp/")
    assert r["files"] == 1, r
    r = await ok(client, "read_file", path="/tmp/in.txt")
    assert r["content"] == "pushed in\n", r
    await refused(client, "push_files", ["outside the project"], source="../outside.txt",
                  destination="/tmp/")
    await refused(client, "push_files", ["outside the project"], source="/etc/hostname",
                  destination="/tmp/")

    j = await ok(client, "apply_manifest", manifest="job.yaml")
    assert j["status"] == "succeeded" and j["counts"]["succeeded"] == 1, j
    (step,) = j["steps"]
    assert step["id"].startswith("hello") and step["status"] == "succeeded", j
    assert "hi from the job" in step["log_tail"], j
    await refused(client, "apply_manifest", ["outside the project"], manifest="../outside.yaml")
    await refused(client, "apply_manifest", ["bad.yaml:", "nothing ran"], manifest="bad.yaml")

    b = (await ok(client, "sandbox_create"))["sandbox"]
    await refused(client, "run_command", ["which one", box, b], command="true")
    await refused(client, "sandbox_create", ["limit is 2"])
    listed = await ok(client, "sandbox_list")
    assert sorted(s["name"] for s in listed["sandboxes"]) == sorted([box, b]), listed
    assert listed["session"] == session and listed["max_sandboxes"] == 2, listed
    s = await ok(client, "sandbox_shutdown", sandbox=b)
    assert s["removed"] and s["sandboxes_left"] == [box], s
    await refused(client, "sandbox_shutdown", ["no sandbox `" + b + "`"], sandbox=b)
    await refused(client, "run_command", ["no sandbox `elsewhere`"], sandbox="elsewhere",
                  command="true")

    # A fork: its copies hold the original's files (not /tmp's, a tmpfs),
    # count toward the limit, and only the session's sandboxes are forked.
    await ok(client, "run_command", sandbox=box, command="echo kept > /home/sandbox/kept.txt")
    await refused(client, "sandbox_fork", ["limit is 2", "asks for 2 more"], sandbox=box,
                  count=2)
    await refused(client, "sandbox_fork", ["no sandbox `elsewhere`"], sandbox="elsewhere")
    f = await ok(client, "sandbox_fork", sandbox=box)
    (copy,) = f["copies"]
    assert copy == box + "-fork-1" and f["processes_copied"] is False, f
    assert "not copied" in f["note"] and f["sandboxes_in_session"] == 2, f
    r = await ok(client, "read_file", sandbox=copy, path="/home/sandbox/kept.txt")
    assert r["content"] == "kept\n", r
    await refused(client, "sandbox_fork", ["limit is 2"], sandbox=box, names=["other"])
    listed = await ok(client, "sandbox_list")
    assert sorted(s["name"] for s in listed["sandboxes"]) == sorted([box, copy]), listed
    return {"session": session, "sandbox": box, "removed": b, "copy": copy}


async def hold(client, fork=False):
    # MCP_CREATE: more arguments of sandbox_create, as JSON (a cluster's
    # pods ask for less CPU).
    a = await ok(client, "sandbox_create", **json.loads(os.environ.get("MCP_CREATE", "{}")))
    box = a["sandbox"]
    left = {"session": a["session"], "sandbox": box}
    if fork:
        await ok(client, "write_file", sandbox=box, path="/home/sandbox/kept.txt", content="kept\n")
        left["copies"] = (await ok(client, "sandbox_fork", sandbox=box))["copies"]
        for copy in left["copies"]:
            r = await ok(client, "read_file", sandbox=copy, path="/home/sandbox/kept.txt")
            assert r["content"] == "kept\n", r
    return left


async def main():
    mode, rest = sys.argv[1], sys.argv[2:]
    if mode.endswith("stdio"):
        project, binary, *args = rest
        server = StdioServerParameters(command=binary, args=["mcp", *args], cwd=project,
                                       env=dict(os.environ))
    else:
        url, token = rest
        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"},
                                  timeout=httpx2.Timeout(30, read=300))
        server = streamable_http_client(url, http_client=http)
    async with Client(server) as client:
        if mode.startswith("hold"):
            left = await hold(client, fork="fork" in mode)
        else:
            left = await every_tool(client)
        print(json.dumps(left), flush=True)
        await asyncio.to_thread(sys.stdin.readline)


asyncio.run(main())
