"""Compile-time processing of ``<hfield>`` assets (MuJoCo 3.4.0's mjCHField): the
elevations from a PNG, a binary file or inline data, normalised as MuJoCo stores them
in ``hfield_data``, and the derived quantities a geom using the height field needs.
"""

from __future__ import annotations

import io
import math
from dataclasses import dataclass
from typing import Optional

import numpy as np

from ..errors import ModelError
from ..kernels.consts import EPS
from . import decoded
from .mesh_io import _content_type
from .mesh_math import _F32

__all__ = ["CompiledHfield", "compile_hfield", "hfield_cached"]


@dataclass
class CompiledHfield:
    """A height field as MuJoCo 3.4.0 stores it (hfield_size/nrow/ncol/data)."""

    name: str
    size: np.ndarray      # (4,) radius_x, radius_y, elevation_z, base_z
    nrow: int
    ncol: int
    data: np.ndarray      # (nrow*ncol,) float32, normalised to [0,1], row 0 = lowest y

    def aabb(self) -> np.ndarray:
        s = self.size
        return np.array([0.0, 0.0, (s[2] - s[3]) / 2, s[0], s[1], (s[2] + s[3]) / 2])

    def rbound(self) -> float:
        s = self.size
        return math.sqrt(s[0] * s[0] + s[1] * s[1] + max(s[2] * s[2], s[3] * s[3]))

    def geom_size(self) -> np.ndarray:
        s = self.size
        return np.array([s[0], s[1], 0.25 * s[2] + 0.5 * s[3]])


def _png_grey(data: bytes, fname: str) -> np.ndarray:
    """Decode a PNG to 8-bit grey the way lodepng's LCT_GREY conversion does:
    grey images keep their value (16-bit: high byte), colour images use the red
    channel, palettes their entry's red value; alpha is ignored."""
    from PIL import Image
    if not data:
        raise ModelError(f"empty PNG file '{fname}'")
    try:
        img = Image.open(io.BytesIO(data))
        img.load()
    except Exception as exc:  # noqa: BLE001
        reason = "not a PNG file" if "cannot identify image" in str(exc) else exc
        raise ModelError(f"error decoding PNG file '{fname}': {reason}") from None
    if img.format != "PNG":
        raise ModelError(f"error decoding PNG file '{fname}': not a PNG file")
    mode = img.mode
    if mode in ("I;16", "I;16B", "I;16L", "I"):
        a = np.asarray(img).astype(np.int64)
        if mode == "I" and img.info.get("transparency") is None and a.max(initial=0) <= 255 \
                and getattr(img, "bits", 8) <= 8:
            return a.astype(np.uint8)
        return (a >> 8).astype(np.uint8)
    if mode == "1":
        return (np.asarray(img.convert("L"))).astype(np.uint8)
    if mode in ("L", "LA"):
        return np.asarray(img.getchannel(0)).astype(np.uint8)
    if mode == "P":
        rgb = img.convert("RGB")
        return np.asarray(rgb.getchannel(0)).astype(np.uint8)
    rgb = img.convert("RGBA") if mode not in ("RGB", "RGBA") else img
    return np.asarray(rgb.getchannel(0)).astype(np.uint8)


def _file_type(file_name, content_type) -> str:
    """The height field file's content type (MuJoCo's custom format when unknown)."""
    return _content_type(file_name, content_type) or "image/vnd.mujoco.hfield"


def hfield_cached(file_digest: bytes, file_name, content_type) -> bool:
    """Whether the elevations of the file with this digest are decoded already
    (tiphys/compiler/decoded.py)."""
    return decoded.cached(("hfield", file_digest, _file_type(file_name, content_type)))


def _decode(buf: bytes, fname: str, ctype: str):
    """(nrow, ncol, elevations bottom row first) of a PNG or MuJoCo's binary file."""
    if ctype == "image/png":
        img = _png_grey(buf, fname)
        nrow, ncol = int(img.shape[0]), int(img.shape[1])
        return nrow, ncol, img[::-1].astype(np.float32).ravel()
    if len(buf) < 1:
        raise ModelError(f"could not read hfield file '{fname}'")
    if len(buf) < 8:
        raise ModelError(f"hfield missing header '{fname}'")
    nrow, ncol = (int(x) for x in np.frombuffer(buf, dtype="<i4", count=2))
    if nrow < 1 or ncol < 1:
        raise ModelError(f"non-positive hfield dimensions in file '{fname}'")
    if len(buf) != nrow * ncol * 4 + 8:
        raise ModelError(f"unexpected file size in file '{fname}'")
    return nrow, ncol, np.frombuffer(buf, dtype="<f4", count=nrow * ncol,
                                     offset=8).astype(np.float32)


def compile_hfield(*, name: str = "", file_bytes: Optional[bytes] = None,
                   file_name: Optional[str] = None, content_type: Optional[str] = None,
                   nrow: int = 0, ncol: int = 0, size=(0, 0, 0, 0),
                   elevation=None, file_digest: Optional[bytes] = None) -> CompiledHfield:
    """Compile one height field as MuJoCo 3.4.0 does.

    ``elevation`` is the inline attribute, row-major with the *first* row at
    the top (largest y), as in MJCF; it is flipped so that hfield_data row 0
    is the bottom row.  Without file and elevation, nrow x ncol zeros. A file's
    elevations are decoded once per contents (tiphys/compiler/decoded.py);
    ``file_digest`` (tiphys.io.resources.content_digest of the contents) may stand
    for ``file_bytes`` when hfield_cached says so.
    """
    size = np.asarray(size, dtype=np.float64).reshape(-1)
    if size.size != 4:
        raise ModelError("hfield size must have 4 values")
    nrow = int(nrow or 0)
    ncol = int(ncol or 0)
    has_file = file_name is not None or file_bytes is not None or file_digest is not None
    data = None
    if not has_file and nrow > 0 and ncol > 0:
        if elevation is not None and np.asarray(elevation).size:
            e = np.asarray(elevation, dtype=np.float32).ravel()
            if e.size != nrow * ncol:
                raise ModelError("elevation data length must match nrow*ncol")
            data = e.reshape(nrow, ncol)[::-1].ravel().copy()
        else:
            data = np.zeros(nrow * ncol, np.float32)
    elif not has_file and elevation is not None and np.asarray(elevation).size:
        raise ModelError("hfield elevation requires positive nrow and ncol")

    for i in range(4):
        if not size[i] > 0:
            raise ModelError("size parameter is not positive in hfield")

    if has_file:
        nrow = ncol = 0
        fname = file_name or "<hfield>"
        ctype = _file_type(file_name, content_type)
        if ctype not in ("image/png", "image/vnd.mujoco.hfield"):
            raise ModelError(f"unsupported content type: '{ctype}'")
        if file_bytes is not None and file_digest is None:
            from ..io.resources import content_digest
            file_digest = content_digest(file_bytes)
        key = ("hfield", file_digest, ctype)
        hit = decoded.get(key) if file_digest is not None else None
        if hit is not None:
            nrow, ncol, data = hit
        elif file_bytes is None:
            raise ModelError(f"could not read hfield file '{fname}'")
        else:
            nrow, ncol, data = _decode(bytes(file_bytes), fname, ctype)
            decoded.put(key, (nrow, ncol, data))

    if nrow < 1 or ncol < 1 or data is None or data.size == 0:
        raise ModelError("hfield not specified")
    if nrow < 2 or ncol < 2:
        # MuJoCo accepts these, then divides by ncol-1 / nrow-1 in every collision
        source = f"file '{file_name}'" if has_file and file_name else "data"
        raise ModelError(f"hfield {source} has {nrow} row(s) and {ncol} column(s); a "
                         f"height field needs at least 2 rows and 2 columns")
    data = data.astype(np.float32)
    emin = min(_F32(1e10), data.min())
    emax = max(_F32(-1e10), data.max())
    if emin > emax:
        raise ModelError(f"invalid data range in hfield '{file_name or ''}'")
    data = (data - emin).astype(np.float32)
    rng = _F32(emax - emin)
    if float(rng) > EPS:
        data = (data / rng).astype(np.float32)
    return CompiledHfield(name=name, size=size.copy(), nrow=nrow, ncol=ncol, data=data)
