"""Typed reading of MJCF attributes with default classes, and located errors."""
from __future__ import annotations

import functools
import math
import struct
from typing import Optional, Sequence

import numpy as np

from ..errors import ModelError, error_at
from ..kernels.consts import LIMITED_AUTO, LIMITED_FALSE, LIMITED_TRUE


def _split(text: str) -> list[str]:
    return text.split()  # MuJoCo: whitespace only ("1,2,3" is a bad format)


def _plain(tok: str) -> bool:
    """Python also parses "1_000" and non-ASCII digits; MuJoCo (strtod/strtol) does not."""
    return tok.isascii() and "_" not in tok


def _subnormal(value: float) -> bool:
    # from the bits: with denormals-are-zero set (Taichi sets it) comparisons see 0
    bits = struct.unpack("<Q", struct.pack("<d", value))[0]
    return (bits >> 52) & 0x7FF == 0 and bits & ((1 << 52) - 1) != 0


def _nonzero_mantissa(tok: str) -> bool:
    # a nonzero number read as 0: underflow (with flush-to-zero set, as after Taichi's
    # init, Python's float() itself flushes subnormals)
    t = tok.lower().lstrip("+-")
    if t.startswith("0x"):
        return any(c in "123456789abcdef" for c in t[2:].split("p")[0])
    return any(c in "123456789" for c in t.split("e")[0])


_MIN_NORMAL = 2.2250738585072014e-308  # smallest normal double


class _BadNumber(Exception):
    """A token strtod rejects (``underflow``: one it reads as out of range)."""

    def __init__(self, token: str, underflow: bool):
        super().__init__(token)
        self.token, self.underflow = token, underflow


@functools.lru_cache(maxsize=1 << 14)
def _floats_of(text: str) -> tuple[float, ...]:
    # the same few texts ("0 0 0", "1") recur across elements and models: parse once
    out = []
    for tok in _split(text):
        try:
            if not _plain(tok):
                raise ValueError(tok)
            if tok.lstrip("+-")[:2].lower() == "0x":  # strtod reads hex floats
                value = float.fromhex(tok)
            else:
                value = float(tok)
        except (ValueError, OverflowError):
            raise _BadNumber(tok, False) from None
        # a normal nonzero value needs no look at its bits
        if abs(value) < _MIN_NORMAL and (
                _subnormal(value) or (value == 0 and _nonzero_mantissa(tok))):  # ERANGE
            raise _BadNumber(tok, True)
        out.append(value)
    return tuple(out)


def parse_floats(el, name: str, text: str) -> list[float]:
    try:
        return list(_floats_of(text))
    except _BadNumber as bad:
        if bad.underflow:
            raise error_at(el, f"number is too small (underflow), got '{bad.token}'",
                           name) from None
        raise error_at(el, f"expected numbers, got '{text}'", name) from None


@functools.lru_cache(maxsize=1 << 12)
def _ints_of(text: str):
    """The integers of a text (a tuple), or the message of why it has none."""
    out = []
    for tok in _split(text):
        try:
            if not _plain(tok):
                raise ValueError(tok)
            value = int(tok)
        except ValueError:
            return f"expected integers, got '{text}'"
        if not -2**31 <= value < 2**31:  # MuJoCo's int is 32-bit
            return f"integer out of range, got '{tok}'"
        out.append(value)
    return tuple(out)


def parse_ints(el, name: str, text: str) -> list[int]:
    values = _ints_of(text)
    if type(values) is str:
        raise error_at(el, values, name)
    return list(values)


@functools.lru_cache(maxsize=1 << 14)
def _all_finite(values: tuple) -> bool:
    return all(map(math.isfinite, values))


_DEFAULT_ARRAYS: dict[int, tuple] = {}  # id(default tuple) -> (the tuple, its array)


def _default_array(default) -> np.ndarray:
    """A new float64 array of a default value. The defaults are tuple constants in the
    code: each one's array is built once, then copied (faster than converting the
    tuple each time). Keyed by identity, not equality, which would take -0.0 for 0."""
    if type(default) is tuple:
        entry = _DEFAULT_ARRAYS.get(id(default))
        if entry is not None and entry[0] is default:
            return entry[1].copy()
        arr = np.array(default, dtype=np.float64)
        if len(_DEFAULT_ARRAYS) < 4096:  # the tuple is kept alive, so its id stays its own
            _DEFAULT_ARRAYS[id(default)] = (default, arr.copy())
        return arr
    return np.array(default, dtype=np.float64)


# (text, default class's text, n, exact, id(default), finite) -> (default, array)
_FLOATS: dict[tuple, tuple] = {}

BOOL = {"false": 0, "true": 1}
LIMITED = {"false": LIMITED_FALSE, "true": LIMITED_TRUE, "auto": LIMITED_AUTO}  # mjtLimited


class Attrs:
    """The attributes of one element: explicit ones first, then its default class.

    Both are merged into one dict when the Attrs is made (one pass over the
    element's fields), so that each of the many reads is one lookup."""

    __slots__ = ("el", "defaults", "_vals")

    def __init__(self, el, defaults: Optional[dict] = None):
        self.el = el
        self.defaults = defaults = defaults or {}
        vals = dict(defaults)
        attr_of = type(el)._attr_of
        for field, value in el.__dict__.items():
            if value is not None:
                name = attr_of.get(field)
                if name is not None:
                    vals[name] = value
        self._vals = vals

    def text(self, name: str) -> Optional[str]:
        return self._vals.get(name)

    def _numbers(self, name: str, text: str) -> tuple[float, ...]:
        try:
            return _floats_of(text)
        except _BadNumber:
            parse_floats(self.el, name, text)  # raises the located error
            raise

    def has(self, name: str) -> bool:
        return self._vals.get(name) is not None

    def explicit(self, name: str) -> bool:
        return self.el.get_attr(name) is not None

    def has_numbers(self, name: str) -> bool:
        """Given with at least one value (MuJoCo reads an empty number list as absent)."""
        text = self._vals.get(name)
        if text is not None and _split(text):
            return True
        inherited = self.defaults.get(name)
        return inherited is not None and bool(_split(inherited))

    def str(self, name: str, default: Optional[str] = None) -> Optional[str]:
        value = self._vals.get(name)
        return default if value is None else value

    def floats(self, name: str, n: Optional[int] = None, default=None, exact: bool = True,
               finite: bool = True) -> Optional[np.ndarray]:
        """A float vector. ``exact``: exactly n values; else 1..n values fill a copy of default."""
        text = self._vals.get(name)
        if text is None:
            if default is None:
                return None
            entry = _DEFAULT_ARRAYS.get(id(default))  # (_default_array, inlined)
            if entry is not None and entry[0] is default:
                return entry[1].copy()
            return _default_array(default)
        # the result depends on the texts (the element's, and the default class's when
        # that is another one), n, exact, default and finite only: read once, then copied
        inherited = self.defaults.get(name)
        key = (text, None if inherited is text else inherited, n, exact, id(default), finite)
        entry = _FLOATS.get(key)
        if entry is not None and entry[0] is default:
            arr = entry[1]
            return None if arr is None else arr.copy()
        arr = self._floats(name, text, n, default, exact, finite)
        if default is None or type(default) is tuple:  # (kept alive: its id stays its own)
            if len(_FLOATS) >= 1 << 14:
                _FLOATS.clear()
            _FLOATS[key] = (default, None if arr is None else arr.copy())
        return arr

    def _floats(self, name, text, n, default, exact, finite):
        values = self._numbers(name, text)
        if not values:  # MuJoCo reads an empty number list as an absent attribute:
            inherited = self.defaults.get(name)  # the default class's value stays
            if inherited is None or inherited is text or not _split(inherited):
                return None if default is None else np.array(default, dtype=np.float64)
            text = inherited
            values = tuple(parse_floats(self.el, name, text))
        if finite and not _all_finite(values):
            raise error_at(self.el, f"values must be finite, got '{text}'", name)
        if n is not None:
            if exact and len(values) != n:
                raise error_at(self.el, f"expected {n} numbers, got {len(values)}", name)
            if not exact:
                if not 1 <= len(values) <= n:
                    raise error_at(self.el, f"expected 1 to {n} numbers, got {len(values)}",
                                   name)
                base = np.zeros(n) if default is None else np.array(default, dtype=np.float64)
                inherited = self.defaults.get(name)
                if inherited is not None and inherited is not text:
                    # a partial value keeps the rest from the default class
                    dvals = parse_floats(self.el, name, inherited)[:n]
                    base[:len(dvals)] = dvals
                base[:len(values)] = values
                return base
        return np.array(values, dtype=np.float64)

    def float(self, name: str, default=None) -> Optional[float]:
        text = self._vals.get(name)
        if text is None:
            return None if default is None else float(default)
        values = self._numbers(name, text)
        if len(values) == 1 and math.isfinite(values[0]):  # the common case
            return values[0]
        v = self.floats(name, 1, None if default is None else [default])
        return None if v is None else float(v[0])

    def ints(self, name: str, n: Optional[int] = None, default=None) -> Optional[np.ndarray]:
        text = self.text(name)
        if text is None:
            return None if default is None else np.array(default, dtype=np.int64)
        values = parse_ints(self.el, name, text)
        if not values and n != 1:  # as floats(); MuJoCo rejects an empty single int
            inherited = self.defaults.get(name)
            if inherited is None or inherited is text or not _split(inherited):
                return None if default is None else np.array(default, dtype=np.int64)
            text = inherited
            values = parse_ints(self.el, name, text)
        if n is not None and len(values) != n:
            raise error_at(self.el, f"expected {n} integers, got {len(values)}", name)
        return np.array(values, dtype=np.int64)

    def int(self, name: str, default=None) -> Optional[int]:
        text = self._vals.get(name)
        if text is None and type(default) is int:  # the common cases, without numpy
            return default
        if text is not None:
            values = _ints_of(text)
            if type(values) is tuple and len(values) == 1:
                return values[0]
            if type(values) is str:
                raise error_at(self.el, values, name)
        v = self.ints(name, 1, None if default is None else [default])
        return None if v is None else int(v[0])

    def keyword(self, name: str, table: dict, default=None):
        text = self._vals.get(name)
        if text is None:
            return default
        key = text.strip()
        if key not in table:
            raise error_at(self.el, f"invalid keyword '{text}', expected one of "
                           f"{', '.join(table)}", name)
        return table[key]

    def bool(self, name: str, default=None):
        return self.keyword(name, BOOL, default)

    def error(self, message: str, attribute: Optional[str] = None) -> ModelError:
        return error_at(self.el, message, attribute)


def require_count(attrs: Attrs, name: str, values: Sequence, multiple: int):
    if len(values) % multiple:
        raise attrs.error(f"number of values must be a multiple of {multiple}", name)
