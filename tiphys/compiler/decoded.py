"""Decoded height-field and texture files of this process (MuJoCo 3.4.0 keeps them in
its asset cache, src/user/user_cache.cc, next to the compiled meshes).

An entry is what a file's bytes decode to (a height field's rows, columns and
elevations; a texture image's pixels), keyed by a digest of the bytes and by what
else the decoding depends on (content type; channels and flips for images), so an
edited file is decoded anew. Least recently used entries go first past
DECODED_CACHE_BYTES. A resource provider whose ``modified`` says a file has not
changed lets the file go unread (tiphys/io/resources.py): ``cached`` answers whether
what it decoded to is still here.
"""
from __future__ import annotations

import collections

import numpy as np

class ByteLRU:
    """A process-wide cache bounded in bytes: least recently used entries go first once
    the entries' bytes pass ``limit``; an entry larger than ``limit`` is not kept, and
    with ``limit`` 0 nothing is. Serves the compiled meshes (tiphys/compiler/mesh.py)
    and the decoded files (below)."""

    def __init__(self, limit: int):
        self.limit = limit
        # key -> (value, nbytes), least recently used first
        self._entries: collections.OrderedDict = collections.OrderedDict()

    def clear(self) -> None:
        self._entries.clear()

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, key) -> bool:
        return self.limit > 0 and key in self._entries

    def get(self, key):
        """The value kept under ``key`` (the stored object itself), or None."""
        hit = self._entries.get(key)
        if hit is None:
            return None
        self._entries.move_to_end(key)
        return hit[0]

    def put(self, key, value, nbytes: int) -> None:
        if nbytes > self.limit:
            return
        self._entries[key] = (value, nbytes)
        total = sum(n for _, n in self._entries.values())
        while total > self.limit:
            total -= self._entries.popitem(last=False)[1][1]


DECODED_CACHE_BYTES = 128 << 20
_decoded = ByteLRU(DECODED_CACHE_BYTES)


def clear_decoded() -> None:
    """Forget every decoded file."""
    _decoded.clear()


def cached(key) -> bool:
    return key in _decoded


def _copies(value: tuple) -> tuple:
    return tuple(v.copy() if isinstance(v, np.ndarray) else v for v in value)


def get(key):
    """The arrays stored under ``key`` (copies: callers may change them), or None."""
    hit = _decoded.get(key)
    return None if hit is None else _copies(hit)


def put(key, value: tuple) -> None:
    """Keep ``value`` (a tuple of arrays and numbers, copied) under ``key``."""
    nbytes = sum(v.nbytes for v in value if isinstance(v, np.ndarray))
    if nbytes <= DECODED_CACHE_BYTES:
        _decoded.put(key, _copies(value), nbytes)
