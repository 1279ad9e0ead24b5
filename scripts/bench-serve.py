#!/usr/bin/env python3
"""Figures of `pocketdock serve` for docs/benchmarks.md (standard library only).

    scripts/bench-serve.py [BINARY]      # default target/release/pocketdock

In a fresh temporary project it measures: GET /v1/runs?limit=50 over 10,000
job records (first request, which builds the index, and the median of 50
after), the server's RSS when idle (before and after that), the latency of
SSE events (event time stamp to client receipt, one client on a running
job), and 50 concurrent SSE clients following one running job (every
client must get every event, in order, once). The engine is the one
POCKETDOCK_SOCKET names.
"""
import http.client
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from datetime import datetime

BIN = os.path.abspath(sys.argv[1] if len(sys.argv) > 1 else "target/release/pocketdock")
JOB = """version: 1
name: bench
sandboxes:
  box: {}
steps:
""" + "".join(
    f"  s{i}:\n    run: sleep 0.3; echo {i}\n" for i in range(20)
)


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])


def request(port, method, path, body=None):
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    headers = {"Content-Type": "application/json"} if body is not None else {}
    c.request(method, path, body=json.dumps(body) if body is not None else None, headers=headers)
    r = c.getresponse()
    data = r.read()
    c.close()
    return r.status, data


def sse(port, path, out, t_recv=None):
    """Read an SSE stream to its end: (id, data) into out; receive times into t_recv."""
    c = http.client.HTTPConnection("127.0.0.1", port, timeout=300)
    c.request("GET", path)
    r = c.getresponse()
    ev_id, data = None, ""
    while True:
        line = r.readline()
        if not line:
            break
        line = line.decode().rstrip("\n")
        if line.startswith("id:"):
            ev_id = int(line[3:].strip())
        elif line.startswith("data:"):
            data += line[5:].lstrip(" ")
        elif line == "":
            if ev_id is not None and data:
                out.append((ev_id, data))
                if t_recv is not None:
                    t_recv.append(time.time())
            ev_id, data = None, ""
    c.close()


def ts(data):
    s = json.loads(data)["ts"]
    # Python's fromisoformat takes at most microseconds.
    head, frac = s.rstrip("Z").split(".")
    return datetime.fromisoformat(f"{head}.{frac[:6]}+00:00").timestamp()


def start_server(root):
    p = subprocess.Popen([BIN, "serve", "--listen", "127.0.0.1:0", "--drain-timeout", "0"],
                         cwd=root, stderr=subprocess.PIPE, text=True)
    line = p.stderr.readline()
    port = int(line.split("http://")[1].split("/")[0].split(":")[1])
    threading.Thread(target=p.stderr.read, daemon=True).start()
    return p, port


def main():
    root = tempfile.mkdtemp(prefix="pd-bench-serve-")
    stack = []
    try:
        with open(os.path.join(root, "job.yaml"), "w") as f:
            f.write(JOB)
        server, port = start_server(root)
        stack.append(server)
        time.sleep(1)
        idle = rss_kib(server.pid)

        # One real record, then 10,000 copies of it.
        status, body = request(port, "POST", "/v1/runs", {"manifest": "job.yaml"})
        assert status == 202, body
        first = json.loads(body)["id"]
        events, recv = [], []
        sse(port, f"/v1/runs/{first}/events", events, recv)
        lat = sorted((t - ts(d)) * 1000 for (_, d), t in zip(events, recv))
        inst = os.path.join(root, ".pocketdock", "instances")
        src = os.path.join(inst, first)
        toml = open(os.path.join(src, "instance.toml")).read()
        for i in range(2, 10_002):
            name = f"bench-{i:04d}"
            d = os.path.join(inst, name)
            os.makedirs(d)
            with open(os.path.join(d, "instance.toml"), "w") as f:
                f.write(toml.replace(first, name))
            shutil.copy(os.path.join(src, "history.jsonl"), d)
        t0 = time.perf_counter()
        status, body = request(port, "GET", "/v1/runs?limit=50")
        cold = (time.perf_counter() - t0) * 1000
        assert status == 200 and len(json.loads(body)["runs"]) == 50
        warm = []
        for _ in range(50):
            t0 = time.perf_counter()
            request(port, "GET", "/v1/runs?limit=50")
            warm.append((time.perf_counter() - t0) * 1000)
        after_list = rss_kib(server.pid)

        # 50 clients on one running job.
        status, body = request(port, "POST", "/v1/runs", {"manifest": "job.yaml"})
        run = json.loads(body)["id"]
        results = [[] for _ in range(50)]
        threads = [threading.Thread(target=sse, args=(port, f"/v1/runs/{run}/events", results[i]))
                   for i in range(50)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        lines = sum(1 for _ in open(os.path.join(inst, run, "history.jsonl")))
        complete = sum(1 for r in results if [i for i, _ in r] == list(range(1, lines + 1)))

        server.terminate()
        server.wait()
        print(json.dumps({
            "idle_rss_kib": idle,
            "rss_after_10k_list_kib": after_list,
            "runs_limit50_10k_cold_ms": round(cold, 1),
            "runs_limit50_10k_warm_p50_ms": round(statistics.median(warm), 1),
            "runs_limit50_10k_warm_max_ms": round(max(warm), 1),
            "sse_latency_ms": {"n": len(lat), "p50": round(statistics.median(lat), 2),
                               "p95": round(lat[int(len(lat) * 0.95) - 1], 2), "max": round(lat[-1], 2)},
            "sse_50_clients": {"events": lines, "clients_with_every_event_once_in_order": complete},
        }, indent=2))
    finally:
        for p in stack:
            if p.poll() is None:
                p.kill()
        shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
