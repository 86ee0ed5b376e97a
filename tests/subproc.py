"""Scripts that need another Taichi configuration (f32, Vulkan) run in a long-lived
helper process, one per pytest worker and configuration, instead of a new process
each.

Taichi has one backend and one default float type per process, so every f32 and
Vulkan check runs outside the f64 test process. A new process per check compiled the
whole pipeline again each time (the f32 pipeline is a minute of compiling on a 2-core
machine, and a dozen files need it), which was most of a cold ``make test``. Here the
first check of a configuration starts a process that stays; the checks after it run
in the same interpreter and reuse every kernel it has compiled.

``run(argv, key=...)`` behaves like ``subprocess.run([sys.executable, *argv],
capture_output=True, text=True)``: argv is a script path or ``-c CODE`` and its
arguments; the script runs as ``__main__`` with that ``sys.argv``, the given stdin
text and working directory, and its stdout, stderr and exit status come back. The
script initialises Taichi itself, as it would alone; ``key`` names the configuration
it asks for ("cpu-f32", "vulkan-f32"), so that scripts asking for different settings
never share a process (a mismatch fails loudly: ``tiphys.init`` raises InitError).
A check that crashes the helper fails with the helper's output; the next check of
that configuration starts a new helper.
"""
from __future__ import annotations

import atexit
import contextlib
import io
import itertools
import os
import runpy
import subprocess
import sys
import tempfile
import traceback
from multiprocessing.connection import Connection

HERE = os.path.dirname(os.path.abspath(__file__))
_SERVERS: dict[str, "_Server"] = {}


class Job:
    """A submitted script; ``result()`` waits for it (checks of one helper run in the
    order they were submitted)."""

    def __init__(self, server: "_Server", jobid: int, argv, timeout: float):
        self.server, self.jobid, self.argv, self.timeout = server, jobid, argv, timeout
        self._done = None

    def result(self) -> subprocess.CompletedProcess:
        if self._done is None:
            self._done = self.server.wait(self)
        return self._done


class _Server:
    def __init__(self, key: str):
        self.key = key
        self.log = tempfile.NamedTemporaryFile(prefix=f"tiphys-{key}-", suffix=".log",
                                               delete=False)
        ours, theirs = os.pipe(), os.pipe()  # requests to it, replies from it
        self.proc = subprocess.Popen(
            [sys.executable, os.path.abspath(__file__), str(ours[0]), str(theirs[1])],
            pass_fds=(ours[0], theirs[1]), stdin=subprocess.DEVNULL, stdout=self.log,
            stderr=subprocess.STDOUT, cwd=HERE)
        os.close(ours[0])
        os.close(theirs[1])
        self.send = Connection(ours[1], readable=False)
        self.recv = Connection(theirs[0], writable=False)
        self.ids = itertools.count()
        self.replies: dict[int, tuple] = {}

    def submit(self, argv, stdin, cwd, timeout) -> Job:
        job = Job(self, next(self.ids), list(argv), timeout)
        self.send.send((job.jobid, job.argv, stdin, cwd))
        return job

    def wait(self, job: Job) -> subprocess.CompletedProcess:
        while job.jobid not in self.replies:
            try:
                ready = self.recv.poll(job.timeout)
                reply = self.recv.recv() if ready else None
            except (EOFError, OSError):  # the connection broke: the helper died
                ready, reply = True, None
            if reply is None:  # timed out or died: this helper is done
                self.close()
                if ready:
                    return subprocess.CompletedProcess(
                        job.argv, self.proc.returncode if self.proc.returncode else -1, "",
                        f"the {self.key} helper process died:\n{self.output()[-3000:]}")
                raise subprocess.TimeoutExpired(job.argv, job.timeout, self.output())
            self.replies[reply[0]] = reply[1:]
        code, out, err = self.replies.pop(job.jobid)
        return subprocess.CompletedProcess(job.argv, code, out, err)

    def output(self) -> str:
        with open(self.log.name, errors="replace") as f:
            return f.read()

    def close(self):
        if _SERVERS.get(self.key) is self:
            del _SERVERS[self.key]
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        for conn in (self.send, self.recv):
            conn.close()


def submit(argv, *, key: str, input: str | None = None, cwd: str | None = None,
           timeout: float = 900) -> Job:
    """Start a script in the helper for ``key`` without waiting (see the module doc)."""
    server = _SERVERS.get(key)
    if server is None or server.proc.poll() is not None:
        server = _SERVERS[key] = _Server(key)
    return server.submit(argv, input, cwd, timeout)


def run(argv, *, key: str, input: str | None = None, cwd: str | None = None,
        timeout: float = 900) -> subprocess.CompletedProcess:
    """Run a script in the helper for ``key`` and wait for it (see the module doc)."""
    return submit(argv, key=key, input=input, cwd=cwd, timeout=timeout).result()


@atexit.register
def _close_all():
    for server in list(_SERVERS.values()):
        server.close()


# ------------------------------------------------------------------ the helper side

def _run_one(argv, stdin, cwd):
    out, err = io.StringIO(), io.StringIO()
    code = 0
    saved = sys.argv, sys.stdin, os.getcwd()
    try:
        if cwd:
            os.chdir(cwd)
        sys.stdin = io.StringIO(stdin or "")
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            try:
                if argv[0] == "-c":
                    sys.argv = ["-c", *argv[2:]]
                    exec(compile(argv[1], "<string>", "exec"), {"__name__": "__main__"})
                else:
                    sys.argv = list(argv)
                    runpy.run_path(argv[0], run_name="__main__")
            except SystemExit as e:
                code = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
                if e.code is not None and not isinstance(e.code, int):
                    print(e.code, file=sys.stderr)
            except BaseException:  # noqa: BLE001 - reported to the test, as a process would
                traceback.print_exc()
                code = 1
    finally:
        sys.argv, sys.stdin = saved[0], saved[1]
        os.chdir(saved[2])
    return code, out.getvalue(), err.getvalue()


def _serve(rfd: int, wfd: int):
    sys.path.insert(0, HERE)
    requests, replies = Connection(rfd, writable=False), Connection(wfd, readable=False)
    while True:
        try:
            jobid, argv, stdin, cwd = requests.recv()
        except EOFError:
            return
        replies.send((jobid, *_run_one(argv, stdin, cwd)))


if __name__ == "__main__":
    _serve(int(sys.argv[1]), int(sys.argv[2]))
