#!/usr/bin/env python3
"""The in-sandbox helper measured from the host, with nothing of pocketdock's
host side in between: a bare client on the helper's socket (agent/src/wire.rs).

    scripts/bench-agent.py ENGINE SANDBOX [N]

ENGINE is `docker` or `podman` (its CLI finds the socket's host directory);
SANDBOX a running sandbox made by pocketdock (`pocketdock create`). Prints the
p50 and p90 of N round trips (default 200) of: INFO (no process started),
RUN `true`, RUN `sh -c true`; the helper's resident memory before and after;
100 MiB of stdout read to the end; 20 parallel `sleep 0.5` runs.
"""

import os
import socket
import statistics
import struct
import subprocess
import sys
import threading
import time

GREETING = b"PDAGENT1"
RUN, INFO, EXIT, ACK, FALLBACK = b"R", b"Q", b"X", b"A", b"F"
RUN_DIR = "/.pocketdock/run"


def host_socket(engine, name):
    fmt = '{{range .Mounts}}{{if eq .Destination "%s"}}{{.Source}}{{end}}{{end}}' % RUN_DIR
    out = subprocess.run([engine, "inspect", "-f", fmt, name], capture_output=True, text=True)
    src = out.stdout.strip()
    if out.returncode != 0 or not src:
        sys.exit(f"bench-agent: {name} has no {RUN_DIR} mount on {engine}; create it with pocketdock")
    return os.path.join(src, "agent.sock")


def put_str(s):
    b = s.encode()
    return struct.pack("<I", len(b)) + b


def put_list(items):
    return struct.pack("<I", len(items)) + b"".join(put_str(i) for i in items)


def run_payload(argv):
    # argv, env, cwd (none), user (none), marker, flags (none)
    return put_list(argv) + put_list([]) + b"\0\0" + put_str("bench-agent") + b"\0"


def read_exact(sock, n):
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("helper closed the connection")
        buf += chunk
    return bytes(buf)


def exchange(path, tag, payload, until):
    """One connection: greeting, one request; frames until `until`. Returns
    (bytes of output seen, last payload)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as s:
        s.connect(path)
        if read_exact(s, 8) != GREETING:
            raise ConnectionError("not a helper")
        s.sendall(tag + struct.pack("<I", len(payload)) + payload)
        seen = 0
        while True:
            t = read_exact(s, 1)
            (n,) = struct.unpack("<I", read_exact(s, 4))
            body = read_exact(s, n)
            if t == FALLBACK:
                raise RuntimeError(f"helper refused: {body.decode(errors='replace')}")
            if t == until:
                return seen, body
            seen += n


def timed(fn, n):
    times = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t) * 1000)
    times.sort()
    return statistics.median(times), times[int(len(times) * 0.9) - 1]


def rss_kib(path):
    _, body = exchange(path, INFO, b"", ACK)
    for line in body.decode().splitlines():
        if line.startswith("rss_kib="):
            return int(line.split("=", 1)[1])
    return -1


def main():
    if len(sys.argv) < 3:
        sys.exit(__doc__)
    engine, name = sys.argv[1], sys.argv[2]
    n = int(sys.argv[3]) if len(sys.argv) > 3 else 200
    path = host_socket(engine, name)
    before = rss_kib(path)
    for _ in range(20):
        exchange(path, RUN, run_payload(["true"]), EXIT)
    cases = {
        "INFO": lambda: exchange(path, INFO, b"", ACK),
        "RUN true": lambda: exchange(path, RUN, run_payload(["true"]), EXIT),
        "RUN sh -c true": lambda: exchange(path, RUN, run_payload(["sh", "-c", "true"]), EXIT),
    }
    for label, fn in cases.items():
        p50, p90 = timed(fn, n)
        print(f"{label:<16} p50 {p50:.2f} ms  p90 {p90:.2f} ms  ({n} runs)")
    print(f"helper RSS       {before} KiB at start, {rss_kib(path)} KiB after {3 * n + 20} requests")

    t = time.perf_counter()
    seen, _ = exchange(path, RUN, run_payload(["head", "-c", str(100 << 20), "/dev/zero"]), EXIT)
    print(f"100 MiB stdout   {time.perf_counter() - t:.2f} s ({seen >> 20} MiB read)")

    done = []
    def sleeper():
        exchange(path, RUN, run_payload(["sleep", "0.5"]), EXIT)
        done.append(time.perf_counter())
    t = time.perf_counter()
    threads = [threading.Thread(target=sleeper) for _ in range(20)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    print(f"20 x sleep 0.5   all ended after {max(done) - t:.2f} s ({len(done)} of 20)")
    print(f"helper RSS       {rss_kib(path)} KiB after the burst")


if __name__ == "__main__":
    main()
