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

DECODED_CACHE_BYTES = 128 << 20
_decoded: collections.OrderedDict = collections.OrderedDict()  # key -> (value, nbytes)


def clear_decoded() -> None:
    """Forget every decoded file."""
    _decoded.clear()


def cached(key) -> bool:
    return DECODED_CACHE_BYTES > 0 and key in _decoded


def get(key):
    """The arrays stored under ``key`` (copies: callers may change them), or None."""
    hit = _decoded.get(key)
    if hit is None:
        return None
    _decoded.move_to_end(key)
    return tuple(v.copy() if isinstance(v, np.ndarray) else v for v in hit[0])


def put(key, value: tuple) -> None:
    """Keep ``value`` (a tuple of arrays and numbers, copied) under ``key``."""
    nbytes = sum(v.nbytes for v in value if isinstance(v, np.ndarray))
    if nbytes > DECODED_CACHE_BYTES:
        return
    _decoded[key] = (tuple(v.copy() if isinstance(v, np.ndarray) else v for v in value),
                     nbytes)
    total = sum(n for _, n in _decoded.values())
    while total > DECODED_CACHE_BYTES:
        total -= _decoded.popitem(last=False)[1][1]
