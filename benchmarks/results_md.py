"""Shared helper: each benchmark script owns one marked section of RESULTS.md."""
from __future__ import annotations

import os

HERE = os.path.dirname(os.path.abspath(__file__))
PATH = os.path.join(HERE, "RESULTS.md")


def write_section(mark: str, section: str, path: str = PATH) -> None:
    """Replace the section that starts with ``mark`` (up to the next ``<!-- `` marker
    or the end of the file) with ``section``; append it when absent. ``section``
    should start with ``mark`` so that the next run finds it again."""
    text = open(path).read() if os.path.exists(path) else "# Benchmark results\n"
    rest = ""
    if mark in text:
        start = text.index(mark)
        end = text.find("\n<!-- ", start + len(mark))
        rest = text[end:].lstrip("\n") if end >= 0 else ""
        text = text[:start]
    out = text.rstrip("\n") + "\n\n" + section.strip("\n") + "\n"
    if rest:
        out += "\n" + rest.rstrip("\n") + "\n"
    with open(path, "w") as f:
        f.write(out)
