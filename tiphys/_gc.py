"""The cyclic garbage collector paused while a model is parsed or compiled."""
from __future__ import annotations

import functools
import gc


def gc_paused(fn):
    """Run ``fn`` with the cyclic collector off (and back on after, if it was on).

    Parsing and compiling make tens of thousands of small objects that all live until
    the compile ends (elements, attribute dicts, 3-vectors); the collector would scan
    them again and again, and with them every object of the process (numpy, Taichi:
    a full collection costs milliseconds), for nothing. Reference counting still
    frees what is dropped; cycles made meanwhile wait for the next collection."""
    @functools.wraps(fn)
    def run(*args, **kwargs):
        if not gc.isenabled():
            return fn(*args, **kwargs)
        gc.disable()
        try:
            return fn(*args, **kwargs)
        finally:
            gc.enable()
    return run
