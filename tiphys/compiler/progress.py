"""A progress line for long compiles (rich, on stderr).

``compile_spec`` opens a ``CompileProgress`` around the whole compile; the slow
steps (one per mesh) report to it through ``step``; a timer draws the line once the
compile has run ``DELAY`` seconds. Nothing is drawn for a compile that ends sooner,
nor where the user did not ask for it: the line appears when stderr is a terminal
(``progress=None``, the default) or when ``progress=True``; ``progress=False``
never draws it. On a terminal the line is a live bar, erased when the compile ends;
elsewhere (``progress=True`` with stderr going to a file or a pipe) it is one plain
line, written once.
"""
from __future__ import annotations

import contextvars
import sys
import threading
from typing import Optional

DELAY = 2.0  # seconds of compiling before the line appears

_current: contextvars.ContextVar = contextvars.ContextVar("tiphys_compile_progress",
                                                          default=None)


class CompileProgress:
    """Context manager: ``total`` slow steps of compiling ``label``."""

    def __init__(self, label: str, total: int, progress: Optional[bool] = None):
        self.label = label
        self.total = max(int(total), 1)
        self.enabled = progress if progress is not None else sys.stderr.isatty()
        self.done = 0
        self.what = ""
        self._lock = threading.Lock()
        self._timer = None
        self._bar = None
        self._task = None
        self._token = None

    def __enter__(self):
        self._token = _current.set(self if self.enabled else None)
        if self.enabled:  # a timer, so that one long step also gets its line
            self._timer = threading.Timer(DELAY, self._show)
            self._timer.daemon = True
            self._timer.start()
        return self

    def __exit__(self, *exc):
        _current.reset(self._token)
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
            if self._bar is not None:
                self._bar.stop()
            self._bar = self._timer = None
        return False

    def _show(self):
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn
        with self._lock:
            if self._timer is None:  # the compile ended meanwhile
                return
            console = Console(stderr=True)
            if not console.is_terminal:  # a log: one plain line (a live bar draws nothing)
                what = f": {self.what}" if self.what else ""
                print(f"compiling {self.label} ({min(self.done, self.total)}/{self.total} "
                      f"slow steps done{what}) ...", file=sys.stderr, flush=True)
                return
            self._bar = Progress(TextColumn("compiling {task.fields[label]}"), BarColumn(),
                                 MofNCompleteColumn(), TextColumn("{task.description}"),
                                 console=console, transient=True)
            self._task = self._bar.add_task(self.what, total=self.total, label=self.label,
                                            completed=min(self.done, self.total))
            self._bar.start()

    def step(self, what: str) -> None:
        """A slow step (``what``: e.g. "mesh torso") begins; the previous one ended."""
        with self._lock:
            self.what = what
            if self._bar is not None:
                self._bar.update(self._task, completed=min(self.done, self.total),
                                 description=what)
            self.done += 1


def step(what: str) -> None:
    """Report a slow compile step to the compile in progress, if it shows a line."""
    current = _current.get()
    if current is not None:
        current.step(what)
