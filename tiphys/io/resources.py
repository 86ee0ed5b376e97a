"""Resource providers, the in-memory VFS, and MuJoCo's path arithmetic.

Opening a resource ``name`` found in the model directory ``modeldir`` follows
MuJoCo 3.4.0's ``mju_openResource`` (src/user/user_resource.cc):

1. the in-memory assets dict given at load time (a VFS) is asked for ``name`` itself,
   not joined to the model directory. Like ``mujoco.MjModel.from_xml_*(xml, assets)``
   (python/mujoco/structs.h ``StripPath`` + src/user/user_vfs.cc ``Open``), a key
   matches any name with the same file name, compared case-insensitively; tiphys
   also accepts a key equal to the whole (reduced) name, which can only find the
   same file, and refuses a file name that two keys share only when no key equals
   the whole name (MuJoCo refuses such a dict outright);
2. then ``modeldir`` and ``name`` are joined (an absolute name stays as it is) and a
   registered URI scheme (``data:`` built in, more with :func:`register_provider`)
   reads the result when its prefix matches;
3. otherwise the file system does.

A missing resource is a ModelError naming what was tried.
"""
from __future__ import annotations

import base64
import os
import urllib.parse
from dataclasses import dataclass
from typing import Callable, Optional

from ..errors import ModelError


@dataclass
class ResourceProvider:
    """A URI scheme (``prefix`` without the colon) and how to read from it.

    ``read(name) -> bytes`` gets the full resource name including the prefix;
    ``getdir(name) -> str`` optionally gives the directory part used to resolve
    relative names inside the resource (e.g. included files).
    """

    prefix: str
    read: Callable[[str], bytes]
    getdir: Optional[Callable[[str], str]] = None


_PROVIDERS: dict[str, ResourceProvider] = {}


def _valid_prefix(prefix: str) -> bool:
    return bool(prefix) and prefix[0].isalpha() and all(
        c.isalnum() or c in "+-." for c in prefix)


def register_provider(provider: ResourceProvider) -> None:
    """Register a URI scheme. Prefixes are case-insensitive; re-registering is an error."""
    key = provider.prefix.lower().rstrip(":")
    if not _valid_prefix(key):
        raise ValueError(f"invalid resource provider prefix {provider.prefix!r}")
    if key in _PROVIDERS:
        raise ValueError(f"resource provider {key!r} already registered")
    _PROVIDERS[key] = provider


def _read_data_uri(name: str) -> bytes:
    # data:[<mediatype>][;base64],<data>
    head, sep, payload = name[5:].partition(",")
    if not sep:
        raise OSError("malformed data: URI (no comma)")
    if head.endswith(";base64"):
        return base64.b64decode(payload)
    return urllib.parse.unquote_to_bytes(payload)


register_provider(ResourceProvider("data", _read_data_uri))


def _scheme(name: str) -> Optional[str]:
    """The registered scheme that ``name`` starts with, else None."""
    head, sep, _ = name.partition(":")
    if sep and len(head) > 1 and _valid_prefix(head):  # len>1: not a Windows drive letter
        key = head.lower()
        if key in _PROVIDERS:
            return key
    return None


# -- path arithmetic (MuJoCo's mujoco::user::FilePath, src/user/user_util.cc) ---------

def _is_sep(c: str) -> bool:
    return c in "/\\"


def abs_prefix(path: str) -> str:
    """The absolute prefix of ``path`` ("" when relative): a registered scheme with its
    colon, a leading slash or backslash, or everything up to a ":/" or ":\\"."""
    if not path:
        return ""
    scheme = _scheme(path)
    if scheme is not None:
        return path[:len(scheme) + 1]
    if _is_sep(path[0]):
        return path[0]
    for mark in (":/", ":\\"):
        pos = path.find(mark)
        if pos >= 0:
            return path[:pos + 2]
    return ""


def is_abs(path: str) -> bool:
    return bool(abs_prefix(path))


def reduce_path(path: str) -> str:
    """Drop "." parts and fold "dir/.." pairs, as MuJoCo does to every file name; the
    separators become "/". Names with a URI scheme are kept as they are."""
    if _scheme(path) is not None:
        return path
    prefix = abs_prefix(path)
    parts = []
    start = len(prefix)
    for i in range(start, len(path)):
        if _is_sep(path[i]):
            part = path[start:i]
            start = i + 1
            if part == ".." and parts and parts[-1] != "..":
                parts.pop()
            elif part != ".":
                parts.append(part)
    parts.append(path[start:])
    return prefix + "/".join(parts)


def join_path(first: str, second: str) -> str:
    """``first`` + ``second``, reduced; an absolute ``second`` is kept as it is."""
    if is_abs(second):
        return reduce_path(second)
    if first and not _is_sep(first[-1]):
        first += "/"
    return reduce_path(first + second)


def dir_part(name: str) -> str:
    """Everything up to and including the last separator ("" when there is none)."""
    pos = max(name.rfind("/"), name.rfind("\\"))
    return name[:pos + 1]


def base_part(name: str) -> str:
    return name[len(dir_part(name)):]


def _combine(first: str, second: str) -> str:
    """MuJoCo's mjuu_combinePaths: plain concatenation with one separator, no reduction
    (the name handed to providers and the file system)."""
    if is_abs(second):
        return second
    if first and not _is_sep(first[-1]):
        return first + "/" + second
    return first + second


# -- reading --------------------------------------------------------------------------

@dataclass
class Resource:
    """An opened resource: the name it was found under, its bytes, its directory."""

    name: str
    data: bytes
    dir: str


class ResourceReader:
    """Opens named resources for one model: VFS first, then schemes, then files.

    ``modeldir`` is the model file's directory ("" for a model given as text: names
    are then relative to the working directory, as in MuJoCo).
    """

    def __init__(self, modeldir: str = "", assets: Optional[dict] = None):
        if modeldir and not _is_sep(modeldir[-1]):
            modeldir += "/"
        self.modeldir = modeldir
        self.assets = dict(assets or {})
        self._exact = {}
        self._by_file = {}
        for key, data in self.assets.items():
            key = str(key)
            self._exact.setdefault(reduce_path(key), data)
            self._by_file.setdefault(base_part(key).lower(), []).append((key, data))

    def _from_assets(self, name: str):
        """(key, bytes) of the assets-dict entry for ``name``, else None."""
        key = reduce_path(name)
        if key in self._exact:
            return key, self._exact[key]
        found = self._by_file.get(base_part(name).lower(), [])
        if len(found) > 1:
            keys = ", ".join(repr(k) for k, _ in found)
            raise ModelError(f"resource '{name}' is ambiguous: the assets dict has several "
                             f"files named '{base_part(name)}' ({keys}); give the key "
                             f"'{key}'")
        return found[0] if found else None

    def full_name(self, name: str) -> str:
        """Where a file name resolves outside the VFS (model directory + name)."""
        return _combine(self.modeldir, name)

    def open(self, name: str, directory: Optional[str] = None, probe: bool = False):
        """The Resource for ``name`` (relative to ``directory``, by default the model
        directory), or None; the second result lists what was tried. With ``probe``
        a file is only checked for (its Resource has no bytes)."""
        if directory is None:
            directory = self.modeldir
        tried = []
        if self.assets:
            hit = self._from_assets(name)
            if hit is not None:
                data = hit[1]
                data = data.encode() if isinstance(data, str) else bytes(data)
                return Resource(name, data, dir_part(name)), tried
            tried.append(f"assets dict (no key '{reduce_path(name)}' or file name "
                         f"'{base_part(name)}')")
        else:
            tried.append("assets dict (none given)")
        full = _combine(directory, name)
        scheme = _scheme(full)
        if scheme is not None:
            provider = _PROVIDERS[scheme]
            try:
                data = provider.read(full)
            except Exception as exc:  # provider failure is a missing resource
                tried.append(f"provider '{scheme}:' ({exc})")
                return None, tried
            rdir = provider.getdir(full) if provider.getdir is not None else ""
            return Resource(full, bytes(data), rdir), tried
        try:
            if probe:  # MuJoCo's file provider opens by stat()
                os.stat(full)
                data = b""
            else:
                with open(full, "rb") as f:
                    data = f.read()
        except OSError as exc:
            tried.append(f"file '{full}' ({exc.strerror or exc})")
            return None, tried
        return Resource(full, data, dir_part(full)), tried

    def exists(self, name: str) -> bool:
        """Whether ``name`` (not joined to the model directory) opens."""
        try:
            res, _ = self.open(name, "", probe=True)
        except ModelError:
            return True  # several assets-dict keys have its file name: it is there
        return res is not None

    def read(self, name: str, directory: str = "", where=None) -> bytes:
        """Bytes of ``name`` in ``directory`` (relative to the model directory)."""
        full = join_path(directory, name) if directory else name
        res, tried = self.open(full)
        if res is None:
            raise missing(name, tried, where)
        return res.data


def missing(name, tried, where=None, note=""):
    """The ModelError for a resource that no provider had."""
    msg = f"resource '{name}' not found"
    if note:
        msg += f" ({note})"
    msg += f"; tried: {'; '.join(tried) if tried else 'nothing'}"
    if where is not None:
        el, attr = where
        return ModelError(msg, file=getattr(el, "xml_file", None),
                          line=getattr(el, "xml_line", None),
                          element=getattr(el, "tag", None), attribute=attr)
    return ModelError(msg)


def read_resource(name: str, basedir: str = "", assets: Optional[dict] = None) -> bytes:
    return ResourceReader(basedir, assets).read(name)
