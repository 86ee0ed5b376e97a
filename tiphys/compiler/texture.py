"""<texture>: builtin patterns and image files, compiled to MuJoCo's tex_* arrays.

A texture compiles to (type, colorspace, width, height, nchannel, bytes) exactly as
MuJoCo 3.4.0's mjCTexture: builtin gradient/checker/flat patterns with edge, cross or
random marks (the random dots use the same mt19937_64 stream, seed 42), PNG files
(decoded by Pillow), KTX blobs and MuJoCo's custom binary format; cube and skybox
textures from one file (repeated or a grid layout) or six separate files.
"""
from __future__ import annotations

import io
import os
from dataclasses import dataclass

import numpy as np

from ..errors import ModelError
from . import decoded
from .polygons import PURE_PYTHON_ENV
from ..kernels.consts import (BUILTIN_CHECKER, BUILTIN_FLAT, BUILTIN_GRADIENT, BUILTIN_NONE,
                              COLORSPACE_AUTO, COLORSPACE_LINEAR, COLORSPACE_SRGB, MARK_CROSS,
                              MARK_EDGE, MARK_NONE, MARK_RANDOM, TEXTURE_2D, TEXTURE_CUBE,
                              TEXTURE_SKYBOX)

# MJCF keywords -> mjtTexture, mjtColorSpace, mjtBuiltin, mjtMark
TEXTURE_TYPES = {"2d": TEXTURE_2D, "cube": TEXTURE_CUBE, "skybox": TEXTURE_SKYBOX}
COLORSPACES = {"auto": COLORSPACE_AUTO, "linear": COLORSPACE_LINEAR, "sRGB": COLORSPACE_SRGB}
BUILTINS = {"none": BUILTIN_NONE, "gradient": BUILTIN_GRADIENT, "checker": BUILTIN_CHECKER,
            "flat": BUILTIN_FLAT}
MARKS = {"none": MARK_NONE, "edge": MARK_EDGE, "cross": MARK_CROSS, "random": MARK_RANDOM}
CUBE_FILES = ("fileright", "fileleft", "fileup", "filedown", "filefront", "fileback")
_INT_MAX = 2**31 - 1

try:
    from ._mt64 import below as _c_below
    from ._mt64 import stream as _c_stream
    MT64_ERROR = None
except ImportError as exc:  # not built (no C compiler at install): the numpy twister
    if exc.name != f"{__package__}._mt64":
        raise
    _c_below = _c_stream = None
    MT64_ERROR = f"{type(exc).__name__}: {exc}"


@dataclass
class Texture:
    type: int
    colorspace: int
    width: int
    height: int
    nchannel: int
    data: np.ndarray  # uint8, nchannel * width * height


def _texture(ttype, colorspace, width, height, nchannel, data) -> Texture:
    """A Texture whose data has MuJoCo's nchannel*width*height bytes (zero-padded)."""
    n = nchannel * width * height
    out = np.zeros(n, dtype=np.uint8)
    out[:min(n, data.size)] = data.reshape(-1)[:n]
    return Texture(ttype, colorspace, width, height, nchannel, out)


def _byte(x) -> np.ndarray:
    """C's (std::byte)(255*x): truncation toward zero."""
    return np.trunc(255.0 * np.asarray(x, dtype=np.float64)).astype(np.uint8)


def _fill(img: np.ndarray, rgb) -> None:
    """img[...] = rgb for a C-contiguous (..., width, 3) uint8 image. numpy broadcasts
    a 3-byte colour pixel by pixel (about 1 ms for a 127-wide cube texture); one row
    of the colour, tiled once and copied row by row, fills the same bytes ~20x faster."""
    assert img.flags.c_contiguous  # (so that the reshape below is a view of img)
    width = img.shape[-2]
    img.reshape(-1, 3 * width)[:] = np.tile(np.asarray(rgb, np.uint8), width)


def _interp(rgb1, rgb2, pos):
    """MuJoCo's sigmoid blend of two colours by pos in (-1, 1); pos may be an array.
    alpha = 0.5 * (1 + pos / sqrt(1 + pos^2) / (1 / sqrt(2))), clipped to [0, 1], then
    _byte(alpha * rgb1 + (1 - alpha) * rgb2): the same operations in the same order,
    in place and one channel at a time (skyboxes have millions of pixels)."""
    shape = np.shape(pos)
    ratio = _ratio(pos)
    ratio += 1
    return _blend(rgb1, rgb2, ratio).reshape(shape + (len(rgb1),))


def _ratio(pos) -> np.ndarray:
    """pos / sqrt(1 + pos^2) / (1 / sqrt(2)), flat, a new array. Odd in pos bit for
    bit (pos * pos, the division and the scaling are sign-symmetric), so the blend of
    -pos starts from 1 - ratio (1 + -r is 1 - r exactly)."""
    pos = np.asarray(pos, dtype=np.float64).reshape(-1)
    ratio = pos * pos
    ratio += 1
    np.sqrt(ratio, out=ratio)
    np.divide(pos, ratio, out=ratio)
    ratio /= 1.0 / np.sqrt(2)
    return ratio


def _blend(rgb1, rgb2, alpha) -> np.ndarray:
    """(n, channels) bytes of the blend from ``alpha`` = 1 + ratio (changed in place):
    halved, clipped, then _byte(alpha * c1 + (1 - alpha) * c2) per channel; a channel
    with the same pair of values as an earlier one (grey gradients: all three) copies
    its bytes."""
    alpha *= 0.5
    np.clip(alpha, 0.0, 1.0, out=alpha)
    beta = 1 - alpha
    rgb1, rgb2 = np.asarray(rgb1, np.float64), np.asarray(rgb2, np.float64)
    out = np.empty((len(alpha), len(rgb1)), np.uint8)
    done = {}  # (c1, c2) -> channel already computed
    for k, pair in enumerate(zip(rgb1.tolist(), rgb2.tolist())):
        if pair in done:
            out[:, k] = out[:, done[pair]]
            continue
        done[pair] = k
        x = alpha * rgb1[k]
        x += beta * rgb2[k]
        x *= 255.0
        out[:, k] = np.trunc(x, out=x)  # _byte
    return out


def _checker(rgb1, rgb2, width, height) -> np.ndarray:
    img = np.empty((height, width, 3), dtype=np.uint8)
    h2, w2 = height // 2, width // 2
    # the two kinds of row, then whole rows copied (filling pixel by pixel with a
    # 3-byte colour is slow for large textures)
    top = np.empty((width, 3), dtype=np.uint8)
    top[:w2], top[w2:] = rgb1, rgb2
    bottom = np.empty((width, 3), dtype=np.uint8)
    bottom[:w2], bottom[w2:] = rgb2, rgb1
    img[:h2] = top
    img[h2:] = bottom
    return img


class MT19937_64:
    """The 64-bit Mersenne twister of the C++ standard library (std::mt19937_64)."""

    N, M = 312, 156
    MASK = (1 << 64) - 1

    def __init__(self, seed: int):
        mt = [seed & self.MASK]
        for i in range(1, self.N):
            prev = mt[-1]
            mt.append((6364136223846793005 * (prev ^ (prev >> 62)) + i) & self.MASK)
        self.mt = np.array(mt, dtype=np.uint64)
        self.index = self.N

    def _twist(self):
        mt, n, m = self.mt, self.N, self.M
        upper, lower = np.uint64(0xFFFFFFFF80000000), np.uint64(0x7FFFFFFF)
        one, a = np.uint64(1), np.uint64(0xB5026F5AA96619E9)
        # y[i] pairs mt[i] with mt[i + 1]; only the last one pairs with a new value
        y = (mt[:-1] & upper) | (mt[1:] & lower)
        mix = (y >> one) ^ ((y & one) * a)
        mt[:n - m] = mt[m:] ^ mix[:n - m]                 # from old values
        mt[n - m:n - 1] = mt[:m - 1] ^ mix[n - m:]        # from the new ones above
        last = (mt[n - 1] & upper) | (mt[0] & lower)
        mt[n - 1] = mt[m - 1] ^ (last >> one) ^ ((last & one) * a)
        self.index = 0

    def take(self, count: int) -> np.ndarray:
        chunks = []
        done = 0
        while done < count:
            if self.index >= self.N:
                self._twist()
            k = min(count - done, self.N - self.index)
            chunks.append(self.mt[self.index:self.index + k].copy())
            done += k
            self.index += k
        y = np.concatenate(chunks) if chunks else np.zeros(0, np.uint64)
        y ^= (y >> np.uint64(29)) & np.uint64(0x5555555555555555)
        y ^= (y << np.uint64(17)) & np.uint64(0x71D67FFFEDA60000)
        y ^= (y << np.uint64(37)) & np.uint64(0xFFF7EEE000000000)
        y ^= y >> np.uint64(43)
        return y

    def uniform(self, count: int) -> np.ndarray:
        """std::uniform_real_distribution<double>(0, 1): one draw / 2^64 each."""
        return _uniform(self.take(count))


def _uniform(draws: np.ndarray) -> np.ndarray:
    u = draws.astype(np.float64) / 2.0**64
    return np.minimum(u, np.nextafter(1.0, 0.0))


def _c_enabled() -> bool:
    return _c_stream is not None and os.environ.get(PURE_PYTHON_ENV, "") in ("", "0")


def _random_uniform(seed: int, count: int) -> np.ndarray:
    """MT19937_64(seed).uniform(count), drawn in C where _mt64 is built (and
    TIPHYS_PURE_PYTHON_MESH is unset, empty or 0)."""
    if _c_enabled():
        return _uniform(np.frombuffer(_c_stream(seed, count), np.uint64))
    return MT19937_64(seed).uniform(count)


def _random_below(seed: int, count: int, threshold: float) -> np.ndarray:
    """_random_uniform(seed, count) < threshold, as a bool array; in C (one integer
    comparison a draw: the draw grows with the output) where _mt64 is built."""
    if _c_enabled():
        return np.frombuffer(_c_below(seed, count, threshold), np.uint8).view(np.bool_)
    return _random_uniform(seed, count) < threshold


def _marks(img, mark, markrgb, random, faces: int):
    """Edge/cross marks per face and random dots over the whole image (in place)."""
    rgbm = _byte(markrgb)
    height, width = img.shape[0] // faces, img.shape[1]
    for face in range(faces):
        sub = img[face * height:(face + 1) * height]
        if mark == MARK_EDGE:
            sub[:, 0] = sub[:, width - 1] = rgbm
            sub[0, :] = sub[height - 1, :] = rgbm
        elif mark == MARK_CROSS:
            sub[:, width // 2] = rgbm
            sub[height // 2, :] = rgbm
    if mark == MARK_RANDOM and random > 0:
        img.reshape(-1, 3)[_random_below(42, img.shape[0] * img.shape[1], random)] = rgbm


def builtin_2d(builtin, rgb1, rgb2, mark, markrgb, random, width, height) -> np.ndarray:
    """mjCTexture::Builtin2D as an RGB (height, width, 3) image."""
    img = np.zeros((height, width, 3), dtype=np.uint8)
    if builtin == BUILTIN_GRADIENT:
        c = np.arange(width, dtype=np.float64)
        r = np.arange(height, dtype=np.float64)
        x = 2 * c[None, :] / (width - 1) - 1 if width > 1 else np.full((1, 1), np.nan)
        y = 1 - 2 * r[:, None] / (height - 1) if height > 1 else np.full((1, 1), np.nan)
        pos = 2 * np.sqrt(x * x + y * y) - 1
        with np.errstate(invalid="ignore"):
            img[:] = _interp(rgb2, rgb1, np.broadcast_to(pos, (height, width)))
    elif builtin == BUILTIN_CHECKER:
        img[:] = _checker(_byte(rgb1), _byte(rgb2), width, height)
    elif builtin == BUILTIN_FLAT:
        _fill(img, _byte(rgb1))
    _marks(img, mark, markrgb, random, 1)
    return img


def builtin_cube(builtin, rgb1, rgb2, mark, markrgb, random, width) -> np.ndarray:
    """mjCTexture::BuiltinCube: six width x width faces stacked (right, left, up,
    down, front, back), as a (6*width, width, 3) image."""
    w = width
    img = np.zeros((6 * w, w, 3), dtype=np.uint8)
    faces = img.reshape(6, w, w, 3)
    if builtin == BUILTIN_GRADIENT:
        c = np.arange(w, dtype=np.float64)
        with np.errstate(invalid="ignore", divide="ignore"):
            x = 2 * c[None, :] / (w - 1) - 1
            y = 1 - 2 * c[:, None] / (w - 1)
            norm = np.sqrt(1 + x * x + y * y)
            elside = np.arcsin(y / norm) / (0.5 * np.pi)
            elup = 1 - np.arccos(1.0 / norm) / (0.5 * np.pi)
            side = _interp(rgb1, rgb2, np.broadcast_to(elside, (w, w)))
            for k in (0, 1, 4, 5):
                faces[k] = side
            up = _ratio(np.broadcast_to(elup, (w, w)))  # (down: the blend of -elup)
            faces[3] = _blend(rgb1, rgb2, np.subtract(1, up)).reshape(w, w, 3)
            up += 1
            faces[2] = _blend(rgb1, rgb2, up).reshape(w, w, 3)
    elif builtin == BUILTIN_CHECKER:
        b1, b2 = _byte(rgb1), _byte(rgb2)
        for k in range(6):
            faces[k] = _checker(b1, b2, w, w) if k < 4 else _checker(b2, b1, w, w)
    elif builtin == BUILTIN_FLAT:
        _fill(faces, _byte(rgb1))
        _fill(faces[3], _byte(rgb2))
    _marks(img, mark, markrgb, random, 6)
    return img


def content_type_of(filename: str, content_type) -> str:
    """MuJoCo's GetAssetContentType for textures ('' means the custom format); a
    ``data:`` URI's media type counts as its extension (tiphys's data: provider)."""
    if content_type:
        return content_type
    if filename[:5].lower() == "data:":
        return filename[5:].split(",", 1)[0].split(";")[0].strip()
    ext = os.path.splitext(filename)[1].lower()
    return {".png": "image/png", ".ktx": "image/ktx"}.get(ext, "")


def decode_image(data: bytes, filename: str, content_type, nchannel: int,
                 hflip: bool, vflip: bool):
    """Bytes of an image file -> (pixels (h, w, nchannel) uint8, is_srgb)."""
    ctype = content_type_of(filename, content_type) or "image/vnd.mujoco.texture"
    if ctype not in ("image/png", "image/ktx", "image/vnd.mujoco.texture"):
        raise ModelError(f"unsupported content type: '{ctype}'")
    if not data:
        raise ModelError(f"texture file is empty: '{filename}'")
    if ctype == "image/png":
        from PIL import Image

        mode = {4: "RGBA", 3: "RGB", 1: "L"}.get(nchannel)
        if mode is None:
            raise ModelError(f"Unsupported number of channels: {nchannel}")
        try:
            im = Image.open(io.BytesIO(data))
            is_srgb = "srgb" in im.info
            if im.mode in ("I;16", "I;16B", "I"):  # 16-bit grey: keep the high byte
                im = Image.fromarray((np.asarray(im, dtype=np.uint32) >> 8).astype(np.uint8))
            img = np.asarray(im.convert(mode), dtype=np.uint8)
        except Exception as exc:  # noqa: BLE001 - Pillow raises many kinds
            raise ModelError(f"error decoding PNG file '{filename}': {exc}") from None
        img = img.reshape(img.shape[0], img.shape[1], nchannel)
    elif ctype == "image/ktx":
        if hflip or vflip:
            raise ModelError("cannot flip KTX textures")
        return np.frombuffer(data, dtype=np.uint8).reshape(1, -1, 1), False
    else:
        if len(data) < 8:
            raise ModelError(f"Non-PNG texture, assuming custom binary file format,\n"
                             f"unexpected file size in file '{filename}'")
        w, h = (int(v) for v in np.frombuffer(data[:8], dtype=np.int32))
        if w < 1 or h < 1:
            raise ModelError(f"Non-PNG texture, assuming custom binary file format,\n"
                             f"non-positive texture dimensions in file '{filename}'")
        if len(data) != 8 + w * h * 3:
            raise ModelError(f"Non-PNG texture, assuming custom binary file format,\n"
                             f"unexpected file size in file '{filename}'")
        img = np.frombuffer(data[8:], dtype=np.uint8).reshape(h, w, 3)
        is_srgb = False
    if hflip:
        img = img[:, ::-1]
    if vflip:
        img = img[::-1]
    return np.ascontiguousarray(img), is_srgb


def image_cached(file_digest: bytes, filename: str, content_type, nchannel: int,
                 hflip: bool, vflip: bool) -> bool:
    """Whether the image of the file with this digest is decoded already, with these
    settings (tiphys/compiler/decoded.py)."""
    return decoded.cached(("image", file_digest, content_type_of(filename, content_type),
                           nchannel, hflip, vflip))


def _load_image(read, name: str, attr: str, content_type, nchannel: int, hflip: bool,
                vflip: bool):
    """decode_image of file ``name`` (attribute ``attr``), decoded once per contents and
    settings; ``read(name, attr, reuse)`` is AssetFiles.load's."""
    args = (name, content_type, nchannel, hflip, vflip)
    loaded = read(name, attr, lambda digest: image_cached(digest, *args))
    digest = loaded.digest
    if digest is None:
        from ..io.resources import content_digest
        digest = content_digest(loaded.content)
    key = ("image", digest, content_type_of(name, content_type), nchannel, hflip, vflip)
    hit = decoded.get(key)
    if hit is not None:
        return hit
    if loaded.content is None:
        raise RuntimeError(f"the image of texture file '{name}' is no longer cached")
    img, is_srgb = decode_image(loaded.content, *args)
    decoded.put(key, (img, is_srgb))
    return img, is_srgb


def compile_texture(a, read) -> Texture:
    """One <texture> (its Attrs ``a``); ``read(name, attr, reuse=None)`` opens a file
    (tiphys/compiler/assets.py AssetFiles.load: a Loaded resource)."""
    ttype = a.keyword("type", TEXTURE_TYPES, TEXTURE_CUBE)
    colorspace = a.keyword("colorspace", COLORSPACES, COLORSPACE_AUTO)
    builtin = a.keyword("builtin", BUILTINS, BUILTIN_NONE)
    mark = a.keyword("mark", MARKS, MARK_NONE)
    rgb1 = a.floats("rgb1", 3, (0.8, 0.8, 0.8))
    rgb2 = a.floats("rgb2", 3, (0.5, 0.5, 0.5))
    markrgb = a.floats("markrgb", 3, (0.0, 0.0, 0.0))
    random = a.float("random", 0.01)
    width, height = a.int("width", 0), a.int("height", 0)
    nchannel = a.int("nchannel", 3)
    hflip, vflip = bool(a.bool("hflip", 0)), bool(a.bool("vflip", 0))
    gridsize = a.ints("gridsize", 2, (1, 1))
    layout = a.str("gridlayout", "............")
    if a.has("gridlayout"):
        if len(layout) > 12:
            raise a.error("gridlayout length cannot exceed 12 characters", "gridlayout")
        if len(layout) != gridsize[0] * gridsize[1]:
            raise a.error("gridlayout length must match gridsize", "gridlayout")

    if builtin != BUILTIN_NONE:
        if width < 1:
            raise a.error("Invalid width of builtin texture", "width")
        if ttype != TEXTURE_2D:
            if width >= _INT_MAX // 6:
                raise a.error("Invalid width of builtin texture", "width")
            height = 6 * width
        elif height < 1:
            raise a.error("Invalid height of builtin texture", "height")
        size = width * height
        if size >= _INT_MAX // nchannel or size <= 0:
            raise a.error("Builtin texture too large", "width")
        if ttype == TEXTURE_2D:
            rgb = builtin_2d(builtin, rgb1, rgb2, mark, markrgb, random, width, height)
        else:
            rgb = builtin_cube(builtin, rgb1, rgb2, mark, markrgb, random, width)
        # MuJoCo writes the pattern with a stride of 3 bytes whatever nchannel is
        flat = rgb.reshape(-1)
        if nchannel == 3:  # the pattern is the data (rgb: a new array, of this texture)
            return Texture(ttype, colorspace, width, height, nchannel, flat)
        data = np.zeros(nchannel * size, dtype=np.uint8)
        n = min(flat.size, data.size)
        data[:n] = flat[:n]
        return Texture(ttype, colorspace, width, height, nchannel, data)

    fname = a.str("file")
    if fname:
        img, is_srgb = _load_image(read, fname, "file", a.str("content_type"), nchannel,
                                   hflip, vflip)
        if colorspace == COLORSPACE_AUTO:
            colorspace = COLORSPACE_SRGB if is_srgb else COLORSPACE_LINEAR
        h, w = img.shape[:2]
        if ttype == TEXTURE_2D:
            return _texture(ttype, colorspace, w, h, nchannel, img.reshape(-1))
        if gridsize[0] < 1 or gridsize[1] < 1 or gridsize[0] * gridsize[1] > 12:
            raise a.error("gridsize must be non-zero and no more than 12 squares in texture",
                          "gridsize")
        if w // gridsize[1] != h // gridsize[0] or w % gridsize[1] or h % gridsize[0]:
            raise a.error(f"PNG size must be integer multiple of gridsize in texture "
                          f"'{fname}'", "gridsize")
        flat = img.reshape(-1)
        if tuple(gridsize) == (1, 1):
            size = w
            data = np.zeros(3 * size * size, dtype=np.uint8)
            data[:] = flat[:3 * size * size]
            return _texture(ttype, colorspace, size, size, nchannel, data)
        size = w // gridsize[1]
        faces = np.zeros((6, size, size, 3), dtype=np.uint8)
        loaded = [False] * 6
        rows = flat.reshape(h, -1)  # rows of 3*w bytes, as MuJoCo copies them
        for k in range(gridsize[0] * gridsize[1]):
            sym = layout[k]
            if sym == ".":
                continue
            if sym not in "RLUDFB":
                raise a.error("gridlayout symbol is not among '.RLUDFB' in texture",
                              "gridlayout")
            face = "RLUDFB".index(sym)
            r0, c0 = size * (k // gridsize[1]), size * (k % gridsize[1])
            faces[face] = rows[r0:r0 + size, 3 * c0:3 * c0 + 3 * size].reshape(size, size, 3)
            loaded[face] = True
        for face in range(6):
            if not loaded[face]:
                _fill(faces[face], _byte(rgb1))
        data = np.zeros(nchannel * 6 * size * size, dtype=np.uint8)
        data[:faces.size] = faces.reshape(-1)[:data.size]
        return _texture(ttype, colorspace, size, 6 * size, nchannel, data)

    if ttype == TEXTURE_2D:
        raise a.error("Cannot load 2D texture from separate files, texture", "file")
    names = [a.str(attr) or "" for attr in CUBE_FILES]
    if not any(names):
        raise a.error("No cubefiles_ defined in cube or skybox texture", "fileright")
    faces, size = [None] * 6, None
    for face, (attr, name) in enumerate(zip(CUBE_FILES, names)):
        if not name:
            continue
        img, is_srgb = _load_image(read, name, attr, a.str("content_type"), nchannel,
                                   hflip, vflip)
        if colorspace == COLORSPACE_AUTO:
            colorspace = COLORSPACE_SRGB if is_srgb else COLORSPACE_LINEAR
        h, w = img.shape[:2]
        if w != h:
            raise a.error(f"Non-square PNG file '{name}' in cube or skybox", attr)
        if size is None:
            size = w
        elif w != size:
            raise a.error(f"PNG file '{name}' has incompatible size in texture", attr)
        faces[face] = img.reshape(-1)[:3 * size * size]
    data = np.zeros(3 * 6 * size * size, dtype=np.uint8)
    for face in range(6):
        block = faces[face] if faces[face] is not None else np.tile(_byte(rgb1), size * size)
        data[face * 3 * size * size:(face + 1) * 3 * size * size] = block
    return _texture(ttype, colorspace, size, 6 * size, nchannel, data)
