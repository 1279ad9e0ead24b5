"""pocketdock python kernel driver (stdlib only; Python 3.6+).

Two modes, one file:

  kernel.py client   Relay: connect to this user's kernel server (starting it
                     when none runs), then copy stdin to the server and the
                     server's replies to stdout. pocketdock talks to the
                     kernel through one such relay exec.
  kernel.py serve    The kernel server: a detached process that owns the
                     namespace and listens on a Unix socket. It outlives the
                     relays, so state survives between `pocketdock python`
                     invocations.

Protocol: JSON lines. The server greets each connection with
{"event": "hello", ...}; each request {"id": N, "op": ...} gets
{"id": N, "event": "started"} when it begins executing, then exactly one
reply {"id": N, "ok": true|false, ...}. Requests run one at a time, in
arrival order, in the server's main thread.

User code never sees the protocol channel: replies go over the socket, and
while code runs, file descriptors 1 and 2 (and sys.stdout / sys.stderr) point
at capture files, so print(), os.write(1, ...) and subprocess output are all
captured and none of it can break the framing.
"""

import ast
import errno
import fcntl
import hashlib
import io
import json
import linecache
import os
import queue
import signal
import socket
import sys
import threading
import time
import traceback
import types

SELF = os.path.abspath(__file__)
with open(SELF, "rb") as _f:
    VERSION = hashlib.sha256(_f.read()).hexdigest()[:12]
del _f

STATE_DIR = "/tmp/.pocketdock-kernel-%d" % os.getuid()
SOCK = os.path.join(STATE_DIR, VERSION + ".sock")
LOCK = os.path.join(STATE_DIR, "lock")
LOG = os.path.join(STATE_DIR, "server.log")
PIDFILE = os.path.join(STATE_DIR, "server.pid")

DEFAULT_MAX_OUTPUT = 1 << 20
MAX_REPR = 100 * 1024
MAX_SUMMARY = 120
MAX_VAR_JSON = 8 << 20
# Re-deliver the interrupt this often while timed-out code keeps running.
REFIRE_SECONDS = 0.5
INSPECT_TIMEOUT = 10.0


def dumps(obj):
    return (json.dumps(obj, ensure_ascii=False) + "\n").encode("utf-8", "replace")


def write_all(fd, data):
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]


# --------------------------------------------------------------------- client


def ensure_dir():
    try:
        os.mkdir(STATE_DIR, 0o700)
    except OSError as e:
        if e.errno != errno.EEXIST:
            raise
    st = os.lstat(STATE_DIR)
    if st.st_uid != os.getuid() or not os.path.isdir(STATE_DIR):
        raise SystemExit("pocketdock kernel: %s is not ours" % STATE_DIR)


def try_connect():
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.connect(SOCK)
        return s
    except OSError:
        s.close()
        return None


# How long a starting server, or one asked to listen again, may take.
START_WAIT = 120


def home():
    """$HOME when this user can enter it, else /: a restored copy's exec
    can carry root's HOME for another user."""
    h = os.environ.get("HOME") or "/"
    return h if os.access(h, os.X_OK) else "/"


def relisten():
    """Ask a server that runs but cannot be reached to listen again.

    A sandbox restored from a checkpoint (a process fork) has its server
    and its namespace, but not its socket's path. Returns a connection, or
    None when no such server answers.
    """
    try:
        with open(PIDFILE) as f:
            pid = int(f.read().strip())
        with open("/proc/%d/cmdline" % pid, "rb") as f:
            cmdline = f.read().split(b"\0")
    except (OSError, ValueError):
        return None
    if SELF.encode() not in cmdline or b"serve" not in cmdline:
        return None
    try:
        os.kill(pid, signal.SIGUSR2)
    except OSError:
        return None
    # While it lives: a restored copy's server can be slow to run its
    # handler on a loaded host.
    deadline = time.time() + START_WAIT
    while time.time() < deadline:
        s = try_connect()
        if s is not None:
            return s
        try:
            os.kill(pid, 0)
        except OSError:
            return None
        time.sleep(0.01)
    return None


def spawn_server(env):
    """Start the server detached from this relay (double fork, a session of
    its own): its parent is the sandbox's first process, not an exec, so a
    checkpoint of the sandbox holds it (CRIU dumps the first process's
    tree) and this relay's end does not touch it. Returns its pid."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.close(r)
            os.setsid()
            child = os.fork()
            if child:
                os.write(w, b"%d" % child)
                os._exit(0)
            os.close(w)
            null = os.open(os.devnull, os.O_RDONLY)
            log = os.open(LOG, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            os.dup2(null, 0)
            os.dup2(log, 1)
            os.dup2(log, 2)
            os.closerange(3, os.sysconf("SC_OPEN_MAX"))
            os.chdir(home())
            os.execve(sys.executable, [sys.executable, "-u", SELF, "serve"], env)
        finally:
            os._exit(127)
    os.close(w)
    os.waitpid(pid, 0)
    with os.fdopen(r, "rb") as f:
        got = f.read()
    return int(got) if got else pid


def connect_or_start():
    """Connect to the server; start it first when none answers. Returns (sock, started)."""
    s = try_connect()
    if s is not None:
        return s, False
    ensure_dir()
    with open(LOCK, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        s = try_connect()
        if s is not None:
            return s, False
        s = relisten()
        if s is not None:
            return s, False
        env = dict(os.environ)
        env["POCKETDOCK_EXEC"] = "%016x" % int.from_bytes(os.urandom(8), "big")
        env.pop("PYTHONSTARTUP", None)
        server = spawn_server(env)
        # Waited for while it runs (8 kernels starting at once on an
        # emulated CPU took more than 15 s); one that exits has failed.
        deadline = time.time() + START_WAIT
        while time.time() < deadline:
            s = try_connect()
            if s is not None:
                return s, True
            try:
                os.kill(server, 0)
            except OSError:
                break
            time.sleep(0.01)
    raise SystemExit("pocketdock kernel: the server did not start; see " + LOG)


PARKED = {"event": "parked"}


class Link:
    """The relay's connection to the server, which the server may close
    for a checkpoint (`park`): the relay then waits, and connects again
    when its next request comes, swallowing the new greeting, so the
    stream it relays reads as one connection."""

    def __init__(self, sock):
        self.sock = sock
        self.cond = threading.Condition()

    def parked(self):
        with self.cond:
            self.sock = None
            self.cond.notify_all()

    def current(self):
        """The connection, made again first if the server parked it."""
        with self.cond:
            if self.sock is None:
                sock, _ = connect_or_start()
                read_line(sock)  # the server's hello, already relayed once
                self.sock = sock
                self.cond.notify_all()
            return self.sock

    def wait(self):
        with self.cond:
            while self.sock is None:
                self.cond.wait()
            return self.sock


def read_line(sock):
    line = b""
    while not line.endswith(b"\n"):
        b = sock.recv(1)
        if not b:
            break
        line += b
    return line


def client():
    sock, started = connect_or_start()
    write_all(1, dumps({"event": "relay", "started": started}))
    link = Link(sock)

    def pump_in():
        try:
            while True:
                data = os.read(0, 65536)
                if not data:
                    break
                link.current().sendall(data)
        except OSError:
            pass
        with link.cond:
            if link.sock is None:
                os._exit(0)
            try:
                link.sock.shutdown(socket.SHUT_WR)
            except OSError:
                pass

    threading.Thread(target=pump_in, daemon=True).start()
    while True:
        sock = link.wait()
        pending = b""
        parked = False
        try:
            while True:
                data = sock.recv(65536)
                if not data:
                    break
                pending += data
                lines = pending.split(b"\n")
                pending = lines.pop()
                for line in lines:
                    if line.startswith(b'{"event"') and json.loads(line) == PARKED:
                        parked = True
                    else:
                        write_all(1, line + b"\n")
        except OSError:
            pass
        if not parked:
            write_all(1, pending)
            os._exit(0)
        sock.close()
        link.parked()


# --------------------------------------------------------------------- server


class KernelTimeout(BaseException):
    """Raised in user code when its time is up (not an Exception: `except
    Exception` does not swallow it)."""


class State:
    running = False  # user code (or a user __repr__) is on the main thread
    timed_out = False
    generation = 0  # one per call
    fired = None  # the generation the watchdog last signalled for


STATE = State()


def on_sigint(signum, frame):
    if not STATE.running:
        return
    if STATE.fired is not None:
        if STATE.fired == STATE.generation and STATE.timed_out:
            raise KernelTimeout()
        # A watchdog signal for a call that has already ended: not ours.
        STATE.fired = None
        return
    raise KeyboardInterrupt()


class Budget:
    def __init__(self, limit):
        self.left = limit
        self.dropped = False


class Capture(io.TextIOBase):
    """sys.stdout / sys.stderr while user code runs: writes straight to the
    capture file behind `fd` (keeping order with subprocess output), up to
    the call's budget."""

    def __init__(self, fd, budget, name):
        self._fd = fd
        self._budget = budget
        self._name = name

    @property
    def encoding(self):
        return "utf-8"

    @property
    def errors(self):
        return "replace"

    @property
    def name(self):
        return self._name

    def writable(self):
        return True

    def isatty(self):
        return False

    def fileno(self):
        return self._fd

    def write(self, s):
        if not isinstance(s, str):
            raise TypeError("write() argument must be str, not %s" % type(s).__name__)
        data = s.encode("utf-8", "replace")
        room = self._budget.left
        if len(data) > room:
            self._budget.dropped = True
            data = data[: max(room, 0)]
        if data:
            self._budget.left -= len(data)
            write_all(self._fd, data)
        return len(s)

    def flush(self):
        pass


class Conn:
    def __init__(self, sock):
        self.sock = sock
        self.lock = threading.Lock()
        self.thread = None

    def send(self, obj):
        data = dumps(obj)
        with self.lock:
            try:
                self.sock.sendall(data)
            except OSError:
                pass

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def end(self):
        """Close it now: wake its reader (which then lets go of the socket)."""
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        if self.thread is not None and self.thread is not threading.current_thread():
            self.thread.join(5)
        self.close()


class Server:
    def __init__(self):
        self.queue = queue.Queue()
        self.conns = set()
        self.conns_lock = threading.Lock()
        self.ns = {"__name__": "__main__", "__builtins__": __import__("builtins")}
        self.cell = 0
        self.marker = os.environ.get("POCKETDOCK_EXEC", "")
        # Keep the log on a high fd; 1 and 2 become capture files per call.
        self.log_fd = os.dup(2)
        self.out_path = os.path.join(STATE_DIR, "out-%d" % os.getpid())
        self.err_path = os.path.join(STATE_DIR, "err-%d" % os.getpid())
        self.hello = {
            "event": "hello",
            "pid": os.getpid(),
            "marker": self.marker,
            "python": "%d.%d.%d" % sys.version_info[:3],
            "driver": VERSION,
        }

    def log(self, msg):
        try:
            write_all(self.log_fd, ("%s %s\n" % (time.strftime("%F %T"), msg)).encode())
        except OSError:
            pass

    # -- sockets (threads) --

    def listen(self):
        try:
            os.unlink(SOCK)
        except OSError:
            pass
        srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old = os.umask(0o077)
        try:
            srv.bind(SOCK)
        finally:
            os.umask(old)
        srv.listen(16)
        threading.Thread(target=self.accept_loop, args=(srv,), daemon=True).start()
        with open(PIDFILE, "w") as f:
            f.write("%d\n" % os.getpid())

    def accept_loop(self, srv):
        while True:
            try:
                sock, _ = srv.accept()
            except OSError as e:
                self.log("accept: %s" % e)
                time.sleep(0.1)
                continue
            conn = Conn(sock)
            conn.thread = threading.Thread(target=self.reader, args=(conn,), daemon=True)
            with self.conns_lock:
                self.conns.add(conn)
            conn.thread.start()

    def reader(self, conn):
        conn.send(self.hello)
        f = None
        try:
            f = conn.sock.makefile("rb")
            for line in f:
                if not line.strip():
                    continue
                try:
                    req = json.loads(line.decode("utf-8", "replace"))
                    if not isinstance(req, dict):
                        raise ValueError("a request is a JSON object")
                except ValueError as e:
                    conn.send({"id": None, "ok": False, "error": "bad request: %s" % e})
                    continue
                if req.get("op") == "interrupt":
                    # Answered at once, from this thread: the main thread is busy.
                    if STATE.running:
                        os.kill(os.getpid(), signal.SIGINT)
                    conn.send({"id": req.get("id"), "ok": True, "interrupted": STATE.running})
                    continue
                self.queue.put((conn, req))
        except (OSError, ValueError):
            pass
        if f is not None:
            f.close()
        with self.conns_lock:
            self.conns.discard(conn)
        self.queue.put((conn, None))

    # -- main thread --

    def run(self):
        signal.signal(signal.SIGINT, on_sigint)
        # A restored copy's client asks for a socket path again (relisten).
        signal.signal(signal.SIGUSR2, lambda *_: self.listen())
        null = os.open(os.devnull, os.O_RDONLY)
        os.dup2(null, 0)
        os.close(null)
        self.out_fd = os.open(self.out_path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
        self.err_fd = os.open(self.err_path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
        os.chdir(home())
        sys.path.insert(0, "")
        self.listen()
        self.log("kernel server %d listening on %s" % (os.getpid(), SOCK))
        while True:
            conn, req = self.queue.get()
            if req is None:
                conn.close()
                continue
            rid = req.get("id")
            try:
                reply = self.handle(conn, req)
            except BaseException as e:  # a driver bug must not end the kernel
                self.log("request %r failed: %s" % (rid, traceback.format_exc()))
                reply = {"ok": False, "error": "kernel driver error: %r" % (e,)}
            reply["id"] = rid
            conn.send(reply)
            if req.get("op") == "park":
                conn.end()

    def park(self, asking):
        """Close every connection (this one after its reply), so that a
        checkpoint of the sandbox finds none to a process outside it: a
        relay is an engine exec's. Relays connect again when next asked."""
        with self.conns_lock:
            others = [c for c in self.conns if c is not asking]
        for c in others:
            c.send(PARKED)
            c.end()
        return {"ok": True, "parked": len(others)}

    def handle(self, conn, req):
        op = req.get("op")
        rid = req.get("id")
        if op == "ping":
            return {"ok": True}
        if op == "park":
            return self.park(conn)
        if op not in ("exec", "vars", "var"):
            return {"ok": False, "error": "unknown op %r" % (op,)}
        conn.send({"id": rid, "event": "started"})
        if op == "exec":
            return self.exec_code(
                str(req.get("code", "")),
                req.get("timeout"),
                int(req.get("max_output") or DEFAULT_MAX_OUTPUT),
            )
        if op == "vars":
            return self.guarded(self.list_vars)
        return self.guarded(lambda: self.get_var(str(req.get("name", ""))))

    # -- running user code under a deadline --

    def start_watchdog(self, timeout):
        done = threading.Event()
        if timeout is None:
            return done
        gen = STATE.generation

        def watch():
            if done.wait(timeout) or STATE.generation != gen:
                return
            STATE.timed_out = True
            while STATE.generation == gen and STATE.running:
                STATE.fired = gen
                try:
                    os.kill(os.getpid(), signal.SIGINT)
                except OSError:
                    return
                if done.wait(REFIRE_SECONDS):
                    return

        threading.Thread(target=watch, daemon=True).start()
        return done

    def begin(self, timeout):
        STATE.generation += 1
        STATE.timed_out = False
        STATE.fired = None
        done = self.start_watchdog(timeout)
        STATE.running = True
        return done

    def end(self, done):
        STATE.running = False
        done.set()

    def guarded(self, fn):
        done = self.begin(INSPECT_TIMEOUT)
        try:
            return fn()
        except KernelTimeout:
            return {"ok": False, "error": "timed out after %gs" % INSPECT_TIMEOUT}
        except BaseException as e:
            return {"ok": False, "error": "%s: %s" % (type(e).__name__, e)}
        finally:
            self.end(done)

    def exec_code(self, code, timeout, max_output):
        self.cell += 1
        filename = "<cell-%d>" % self.cell
        linecache.cache[filename] = (len(code), None, code.splitlines(True), filename)
        reply = {
            "ok": True,
            "output": "",
            "stderr": "",
            "error": None,
            "result": None,
            "vars": [],
            "timed_out": False,
            "truncated": False,
            "duration_ms": 0,
        }
        try:
            body, last = self.compile_cell(code, filename)
        except (SyntaxError, ValueError, OverflowError) as e:
            reply["error"] = "".join(traceback.format_exception_only(type(e), e))
            return reply

        # The kernel owns SIGINT: undo whatever an earlier call installed.
        signal.signal(signal.SIGINT, on_sigint)
        before = self.snapshot()
        out_budget, err_budget = Budget(max_output), Budget(max_output)
        for fd in (self.out_fd, self.err_fd):
            os.ftruncate(fd, 0)
            os.lseek(fd, 0, os.SEEK_SET)
        saved = (os.dup(1), os.dup(2))
        os.dup2(self.out_fd, 1)
        os.dup2(self.err_fd, 2)
        sys.stdout = Capture(1, out_budget, "<stdout>")
        sys.stderr = Capture(2, err_budget, "<stderr>")
        value = None
        start = time.time()
        done = self.begin(timeout)
        try:
            try:
                if body is not None:
                    exec(body, self.ns)
                if last is not None:
                    value = eval(last, self.ns)
                    if value is not None:
                        text = repr(value)
                        if len(text) > MAX_REPR:
                            text = text[:MAX_REPR] + "... [truncated: %d characters]" % len(text)
                        reply["result"] = text
            finally:
                self.end(done)
        except KernelTimeout:
            reply["timed_out"] = True
            reply["error"] = "TimeoutError: the code ran longer than %gs and was interrupted (the kernel and its variables are kept)\n" % timeout
        except BaseException as e:
            if STATE.timed_out:
                reply["timed_out"] = True
            reply["error"] = self.format_error(e)
        finally:
            reply["duration_ms"] = int((time.time() - start) * 1000)
            for stream in (sys.stdout, sys.stderr, sys.__stdout__, sys.__stderr__):
                try:
                    stream.flush()
                except BaseException:
                    pass
            os.dup2(saved[0], 1)
            os.dup2(saved[1], 2)
            os.close(saved[0])
            os.close(saved[1])
            sys.stdout = sys.__stdout__
            sys.stderr = sys.__stderr__
        out, out_cut = self.read_capture(self.out_fd, max_output)
        err, err_cut = self.read_capture(self.err_fd, max_output)
        reply["output"] = out
        reply["stderr"] = err
        reply["truncated"] = out_budget.dropped or err_budget.dropped or out_cut or err_cut
        if reply["truncated"]:
            reply["stderr"] += (
                "\n[pocketdock] output truncated: kept the first %d bytes of each stream\n" % max_output
            )
        try:
            reply["vars"] = self.changed(before)
        except BaseException:
            pass
        return reply

    def compile_cell(self, code, filename):
        """The cell as (statements, last expression): a REPL shows the last
        expression's value."""
        tree = ast.parse(code, filename, "exec")
        last = None
        if tree.body and isinstance(tree.body[-1], ast.Expr):
            expr = ast.Expression(tree.body.pop().value)
            last = compile(expr, filename, "eval")
        body = compile(tree, filename, "exec") if tree.body else None
        return body, last

    def format_error(self, e):
        tb = e.__traceback__
        # Drop the driver's own frames.
        while tb is not None and tb.tb_frame.f_code.co_filename == SELF:
            tb = tb.tb_next
        return "".join(traceback.format_exception(type(e), e, tb))

    def read_capture(self, fd, limit):
        """What the call wrote to one capture file, at most `limit` bytes
        (subprocess output bypasses the Python-level budget; this bounds it)."""
        size = os.fstat(fd).st_size
        os.lseek(fd, 0, os.SEEK_SET)
        chunks = []
        got = 0
        while got < min(size, limit):
            data = os.read(fd, min(65536, limit - got))
            if not data:
                break
            chunks.append(data)
            got += len(data)
        return b"".join(chunks).decode("utf-8", "replace"), size > got

    # -- inspection --

    def user_names(self):
        for name, value in list(self.ns.items()):
            if name.startswith("_") or isinstance(value, types.ModuleType):
                continue
            yield name, value

    def snapshot(self):
        return {name: (id(value), type(value)) for name, value in self.user_names()}

    def changed(self, before):
        return sorted(
            name for name, value in self.user_names() if before.get(name) != (id(value), type(value))
        )

    def list_vars(self):
        out = []
        for name, value in sorted(self.user_names()):
            try:
                summary = repr(value)
            except KernelTimeout:
                raise
            except BaseException as e:
                summary = "<repr failed: %s>" % type(e).__name__
            summary = " ".join(summary.split())
            if len(summary) > MAX_SUMMARY:
                summary = summary[: MAX_SUMMARY - 3] + "..."
            out.append({"name": name, "type": type(value).__name__, "summary": summary})
        return {"ok": True, "vars": out}

    def get_var(self, name):
        if name not in self.ns or name.startswith("__"):
            return {"ok": False, "unknown": True, "error": "name %r is not defined in the kernel" % name}
        value = self.ns[name]
        try:
            text = json.dumps(value, allow_nan=False, ensure_ascii=False)
            if len(text) > MAX_VAR_JSON:
                return {"ok": False, "error": "%s is too large to return as JSON (%d bytes; the limit is %d)" % (name, len(text), MAX_VAR_JSON)}
            return {"ok": True, "json": True, "value": value}
        except (TypeError, ValueError, OverflowError, RecursionError):
            text = repr(value)
            if len(text) > MAX_REPR:
                text = text[:MAX_REPR] + "... [truncated: %d characters]" % len(text)
            return {"ok": True, "json": False, "value": text}


def remove_stale_captures():
    for entry in os.listdir(STATE_DIR):
        kind, _, pid = entry.partition("-")
        if kind not in ("out", "err") or not pid.isdigit():
            continue
        try:
            os.kill(int(pid), 0)
        except ProcessLookupError:
            try:
                os.unlink(os.path.join(STATE_DIR, entry))
            except OSError:
                pass
        except OSError:
            pass


def park():
    """Ask a running server to close its connections (before a checkpoint);
    nothing to do when none runs. Exits once the server has closed ours."""
    s = try_connect()
    if s is None:
        return
    s.sendall(dumps({"id": 0, "op": "park"}))
    reply = None
    for line in s.makefile("rb"):
        msg = json.loads(line)
        if msg.get("id") == 0:
            reply = msg
    if not (reply and reply.get("ok")):
        raise SystemExit("pocketdock kernel: park failed: %r" % (reply,))


def serve():
    ensure_dir()
    remove_stale_captures()
    Server().run()


def main():
    mode = sys.argv[1] if len(sys.argv) > 1 else ""
    if mode == "client":
        client()
    elif mode == "park":
        park()
    elif mode == "serve":
        serve()
    else:
        sys.stderr.write("usage: kernel.py client|serve|park\n")
        sys.exit(2)


if __name__ == "__main__":
    main()
