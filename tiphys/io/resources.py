"""Resource providers, the in-memory VFS, and MuJoCo's path arithmetic.

A resource provider is MuJoCo 3.4.0's ``mjpResourceProvider`` (include/mujoco/
mjplugin.h, registered by ``mjp_registerResourceProvider`` in
src/engine/engine_plugin.cc): a URI scheme ``prefix`` and the callbacks
``open(resource) -> bool``, ``read(resource) -> bytes``, ``close(resource)``, the
optional ``getdir(resource) -> str`` and ``modified(resource, timestamp) -> int``, and
``data``, the provider's own opaque value that callbacks reach as
``resource.provider.data``. A :class:`Resource` is MuJoCo's ``mjResource``: the name
(with its prefix), the provider, a ``data`` slot that ``open`` may fill and ``close``
free, and a ``timestamp``.

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
   registered provider whose prefix matches the scheme (case-insensitively, the
   colon required: "https:..." is not an "http" provider's) opens the result. When
   one matches, its answer is final: a failure is a ModelError naming the provider;
   the file system is not tried;
3. otherwise the file system does.

Every resource that is opened is closed exactly once, whatever happens after the
open (MuJoCo closes a resource whose open failed too, and so does tiphys).

Where tiphys deviates, on purpose:

- ``data:`` URIs (RFC 2397) are a built-in provider (MuJoCo 3.4.0 has none);
- a prefix must have two characters at least, so that a Windows drive letter
  ("C:/models/a.xml") is never a scheme (MuJoCo would give "C:..." to a provider
  registered as "c");
- registration errors raise ValueError where MuJoCo warns and returns -1 (an
  invalid prefix, a missing callback) or calls mju_error (another provider under
  the same prefix); registering the identical provider again returns its slot, as
  in MuJoCo;
- a name given to a provider is reduced as MuJoCo reduces paths ("mem:a/./b/../c"
  -> "mem:a/c"; ``data:`` URIs are opaque and kept as written), and a name whose
  ".." climbs above the root of the provider's names ("mem:a/../../x") is refused
  unless the provider was registered with ``allow_parent=True``: a provider is
  never made to read outside what it was given unless the user asks. Plain file
  names may climb (Menagerie's ``meshdir="../assets"``): the file system is the
  user's own;
- the file system and the assets dict have no ``modified``: their resources are read
  on every compile (MuJoCo's file provider compares modification times in whole
  seconds, and its VFS a hash of the contents). Reading costs little next to
  decoding, and tiphys's caches of compiled meshes and decoded files are keyed by a
  digest of the bytes read, so a file rewritten within the same second (or with its
  time restored) is never served stale.

Reusing what a provider gave before (MuJoCo 3.4.0's asset cache, src/user/
user_cache.cc ``mjCCache::PopulateData``, called from ``mjCMesh::TryCompile`` in
user_mesh.cc): after a resource is opened, if it was read before under the same name
from the same provider and that provider has ``modified``, tiphys calls
``modified(resource, timestamp)`` with the timestamp the resource had when it was
read; 0 ("not modified") lets the caller reuse what it made from those bytes (a
compiled mesh) without reading them again. Any other answer, a provider without
``modified`` (MuJoCo: "assume modified"), or nothing reusable, reads the resource;
its timestamp and a digest of its bytes are then remembered (``remembered``). A
provider that says "not modified" of changed bytes gets what it made from the old
ones, as in MuJoCo. tiphys asks this for mesh, height-field and texture files, as
MuJoCo's cache holds those (tiphys/compiler/mesh.py, tiphys/compiler/decoded.py).
"""
from __future__ import annotations

import base64
import collections
import hashlib
import os
import urllib.parse
from dataclasses import dataclass
from typing import Any, Callable, Optional

from ..errors import ModelError


@dataclass(eq=False)
class Resource:
    """One opened resource (MuJoCo's ``mjResource``), handed to a provider's callbacks.

    ``name`` is the full name, prefix included; ``provider`` the provider that opened
    it; ``data`` is the resource's own slot (None before ``open``; the provider may
    keep anything there and free it in ``close``); ``timestamp`` a string ``open`` may
    set (``modified`` compares against such strings).
    """

    name: str
    provider: ResourceProvider
    data: Any = None
    timestamp: str = ""


@dataclass(eq=False)
class ResourceProvider:
    """A URI scheme and its callbacks (MuJoCo's ``mjpResourceProvider``).

    ``prefix``: the scheme without its colon ("mem" serves "mem:..." and "MEM:...").
    ``open(resource) -> bool``: whether ``resource.name`` exists (may fill
    ``resource.data``). ``read(resource) -> bytes`` (or any bytes-like object): the
    contents. ``close(resource)``: called once for every resource opened, also when
    ``open`` returned False or raised. ``getdir(resource) -> str`` (optional): the
    directory part of the name, which relative names inside the resource (an
    included file's meshes) start from; without it they start from "".
    ``modified(resource, timestamp) -> int`` (optional): 0 when the resource, just
    opened, is the one that had ``timestamp`` (a string its ``open`` set before),
    nonzero when it changed (MuJoCo's sign convention: > 0 newer, < 0 older); with
    it, a mesh read before is not read again while the answer is 0 (see the module
    docstring).
    ``data``: the provider's own value, the same for every resource
    (``resource.provider.data``). ``allow_parent``: let names climb above the root of
    the provider's names with "..".

    :meth:`simple` makes one from a single ``read(name) -> bytes`` function.
    """

    prefix: str
    open: Callable[[Resource], bool]
    read: Callable[[Resource], Any]
    close: Callable[[Resource], None]
    getdir: Optional[Callable[[Resource], str]] = None
    modified: Optional[Callable[[Resource, str], int]] = None
    data: Any = None
    allow_parent: bool = False

    @classmethod
    def simple(cls, prefix: str, read: Callable[[str], Any],
               getdir: Optional[Callable[[str], str]] = None, *, data: Any = None,
               allow_parent: bool = False) -> ResourceProvider:
        """A provider from ``read(name) -> bytes`` (and ``getdir(name) -> str``): open
        reads the whole resource into ``resource.data``, read returns it, close drops
        it. A name that ``read`` raises KeyError, FileNotFoundError or LookupError for
        does not open; any other exception is the provider failing. Each call makes
        new callbacks: registering a second ``simple`` provider under the same prefix
        is refused, as MuJoCo refuses one with other function pointers."""
        def open_(res: Resource) -> bool:
            try:
                res.data = read(res.name)
            except (LookupError, FileNotFoundError):
                return False
            return True

        def close(res: Resource) -> None:
            res.data = None

        def read_(res: Resource):
            return res.data

        dir_fn = (lambda res: getdir(res.name)) if getdir is not None else None
        return cls(prefix, open_, read_, close, dir_fn, None, data, allow_parent)


_PROVIDERS: list[ResourceProvider] = []  # slot i + 1 (as MuJoCo numbers them)


def _valid_prefix(prefix) -> bool:
    """MuJoCo's IsValidURISchemeFormat: a letter, then letters, digits, '+', '-', '.'."""
    return isinstance(prefix, str) and bool(prefix) and prefix[0].isascii() and \
        prefix[0].isalpha() and all(c.isascii() and (c.isalnum() or c in "+-.")
                                    for c in prefix)


def _same(p: ResourceProvider, q: ResourceProvider) -> bool:
    return p.prefix.lower() == q.prefix.lower() and all(
        getattr(p, f) is getattr(q, f) for f in ("open", "read", "close", "getdir",
                                                 "modified", "data")) \
        and p.allow_parent == q.allow_parent


def register_provider(provider: ResourceProvider) -> int:
    """Register a resource provider for every later load (mjp_registerResourceProvider);
    returns its slot number (1, 2, ...).

    ValueError for a prefix that is not a URI scheme of two characters or more (a
    letter, then letters, digits, '+', '-' or '.'; no colon), for a missing open,
    read or close callback, and for a prefix (compared case-insensitively) that
    another provider already has. Registering the identical provider again (the same
    callbacks and data) returns its slot."""
    prefix = provider.prefix
    if not _valid_prefix(prefix):
        hint = " (give it without the colon)" if isinstance(prefix, str) and \
            prefix.endswith(":") and _valid_prefix(prefix[:-1]) else ""
        raise ValueError(f"resource provider prefix {prefix!r} is not a valid URI scheme"
                         f"{hint}")
    if len(prefix) < 2:
        raise ValueError(f"resource provider prefix {prefix!r}: one letter would be a "
                         f"Windows drive letter ('{prefix}:/...'); use two or more")
    for cb in ("open", "read", "close"):
        if not callable(getattr(provider, cb)):
            raise ValueError(f"resource provider {prefix!r} must have the open, read and "
                             f"close callbacks ({cb} is {getattr(provider, cb)!r})")
    for cb in ("getdir", "modified"):
        if getattr(provider, cb) is not None and not callable(getattr(provider, cb)):
            raise ValueError(f"resource provider {prefix!r}: {cb} must be callable or "
                             f"None")
    for slot, known in enumerate(_PROVIDERS, 1):
        if known.prefix.lower() == prefix.lower():
            if _same(known, provider):
                return slot
            raise ValueError(f"resource provider '{prefix}' is already registered")
    _PROVIDERS.append(provider)
    return len(_PROVIDERS)


def get_provider(name: str) -> Optional[ResourceProvider]:
    """The registered provider whose prefix is the scheme of ``name`` (the text before
    its first colon, compared case-insensitively), else None (mjp_getResourceProvider)."""
    head, sep, _ = name.partition(":")
    if not sep or len(head) < 2 or not _valid_prefix(head):
        return None
    key = head.lower()
    for provider in _PROVIDERS:
        if provider.prefix.lower() == key:
            return provider
    return None


def _read_data_uri(name: str) -> bytes:
    # data:[<mediatype>][;base64],<data>
    head, sep, payload = name[5:].partition(",")
    if not sep:
        raise ValueError("malformed data: URI (no comma after the media type)")
    if head.endswith(";base64"):  # (white space allowed: a URI wrapped over lines)
        return base64.b64decode("".join(payload.split()), validate=True)
    return urllib.parse.unquote_to_bytes(payload)


DATA_PROVIDER = ResourceProvider.simple("data", _read_data_uri)
register_provider(DATA_PROVIDER)


def _scheme(name: str) -> Optional[str]:
    """The registered prefix (as written in ``name``) that ``name`` starts with."""
    provider = get_provider(name)
    return None if provider is None else name[:len(provider.prefix)]


def _unregistered_scheme(name: str) -> Optional[str]:
    """The scheme-like head of ``name`` ("foo" of "foo:bar.obj") when no provider has
    it, else None."""
    head, sep, _ = name.partition(":")
    if sep and len(head) > 1 and _valid_prefix(head) and get_provider(name) is None:
        return head
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
    separators become "/". After a provider's prefix the rest is reduced the same
    way; a ``data:`` URI is kept as it is (its payload is no path)."""
    scheme = _scheme(path)
    if scheme is not None:
        if scheme.lower() == "data":
            return path
        rest = path[len(scheme) + 1:]
        return path[:len(scheme) + 1] + (reduce_path(rest) if rest else "")
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


def _needs_sep(first: str) -> bool:
    """Whether a separator goes between ``first`` and a name: not after one, and not
    after a bare provider prefix ("mem:" + "a.obj" is "mem:a.obj"; MuJoCo's
    mjuu_combinePaths would make it "mem:/a.obj")."""
    return bool(first) and not _is_sep(first[-1]) and not (
        first[-1] == ":" and _scheme(first) is not None and
        len(_scheme(first)) + 1 == len(first))


def join_path(first: str, second: str) -> str:
    """``first`` + ``second``, reduced; an absolute ``second`` is kept as it is."""
    if is_abs(second):
        return reduce_path(second)
    if _needs_sep(first):
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
    if _needs_sep(first):
        return first + "/" + second
    return first + second


# -- the built-in providers: the assets dict (VFS) and the file system ---------------

def _vfs_open(res: Resource) -> bool:
    hit = res.data._from_assets(res.name)  # (res.data: the reader, as MuJoCo's mjVFS)
    if hit is None:
        return False
    res.data = hit[1]
    return True


def _vfs_read(res: Resource):
    data = res.data
    return data.encode() if isinstance(data, str) else data


def _close_nothing(res: Resource) -> None:
    res.data = None


def _file_close(res: Resource) -> None:
    """Nothing to free (a failed open leaves its OSError in ``res.data``)."""


def _file_open(res: Resource) -> bool:
    try:  # MuJoCo's file provider opens by stat() and reads on the first read
        res.timestamp = str(os.stat(res.name).st_mtime_ns)
    except OSError as exc:
        res.data = exc
        return False
    return True


def _file_read(res: Resource) -> bytes:
    with open(res.name, "rb") as f:
        return f.read()


VFS_PROVIDER = ResourceProvider("vfs", _vfs_open, _vfs_read, _close_nothing,
                                lambda res: dir_part(res.name))
FILE_PROVIDER = ResourceProvider("file", _file_open, _file_read, _file_close,
                                 lambda res: dir_part(res.name))


# -- reading --------------------------------------------------------------------------

@dataclass
class Loaded:
    """A resource read: the name it was found under, its bytes, its directory (what
    relative names inside it start from) and the provider that read it
    (VFS_PROVIDER, FILE_PROVIDER or a registered one). When the open was asked to
    reuse (``ResourceReader.open``'s ``reuse``) and did, ``content`` is None and
    ``digest`` names the bytes read before; ``digest`` is also set after a read that
    was remembered."""

    name: str
    content: Optional[bytes]
    dir: str
    provider: ResourceProvider
    digest: Optional[bytes] = None


def content_digest(data) -> bytes:
    """The digest that names a resource's bytes (keys of the compiled-mesh cache)."""
    return hashlib.sha1(data, usedforsecurity=False).digest()


# What was read from providers with ``modified``: full name -> (provider, the
# resource's timestamp when read, digest of its bytes); least recently used first.
_REMEMBERED: collections.OrderedDict = collections.OrderedDict()
REMEMBERED_ENTRIES = 4096


def remembered(name: str):
    """(timestamp, digest) remembered for resource ``name`` (its full name), or None."""
    entry = _REMEMBERED.get(name)
    return None if entry is None else entry[1:]


def forget_resources() -> None:
    """Forget every remembered resource: the next compile reads each one."""
    _REMEMBERED.clear()


def _unchanged(res: Resource, reuse) -> Optional[bytes]:
    """The digest of the bytes read before under ``res.name`` when ``res``'s provider
    says, through ``modified``, that it has not changed since, and ``reuse`` takes that
    digest; else None."""
    provider = res.provider
    entry = _REMEMBERED.get(res.name)
    if entry is None or entry[0] is not provider:
        return None
    try:
        changed = provider.modified(res, entry[1])
    except Exception as exc:
        raise _provider_error(provider, res.name, "failed modified for", exc) from exc
    if isinstance(changed, bool) or not isinstance(changed, int):
        raise _provider_error(provider, res.name,
                              f"modified gave {type(changed).__name__}, not int, for")
    if changed != 0 or not reuse(entry[2]):
        return None
    _REMEMBERED.move_to_end(res.name)
    return entry[2]


def _remember(res: Resource, content: bytes) -> bytes:
    digest = content_digest(content)
    _REMEMBERED[res.name] = (res.provider, str(res.timestamp or ""), digest)
    _REMEMBERED.move_to_end(res.name)
    while len(_REMEMBERED) > REMEMBERED_ENTRIES:
        _REMEMBERED.popitem(last=False)
    return digest


def _provider_error(provider, name, what, exc=None) -> ModelError:
    msg = f"resource provider '{provider.prefix}' {what} '{name}'"
    if exc is not None:
        msg += f": {type(exc).__name__}: {exc}"
    return ModelError(msg)


def _load(res: Resource, probe: bool, reuse=None) -> Optional[Loaded]:
    """Open, read (unless ``probe``), get the directory of and close ``res``; None when
    the provider's open says no. Whatever happens after ``open`` is called, ``close``
    is called once. A provider that raises, or reads no bytes-like object, is a
    ModelError (the exception chained). ``reuse(digest) -> bool``: see
    ResourceReader.open."""
    provider = res.provider
    try:
        try:
            ok = provider.open(res)
        except ModelError:  # (the VFS's ambiguous name; a provider's own)
            raise
        except Exception as exc:
            raise _provider_error(provider, res.name, "failed opening", exc) from exc
        if not ok:
            return None
        content = b""
        digest = None
        stamped = reuse is not None and not probe and provider.modified is not None
        if stamped:
            digest = _unchanged(res, reuse)
            if digest is not None:
                content = None
        if not probe and content is not None:
            try:
                data = provider.read(res)
            except Exception as exc:
                raise _provider_error(provider, res.name, "failed reading", exc) from exc
            if isinstance(data, str) or data is None:
                raise _provider_error(provider, res.name,
                                      f"read {type(data).__name__}, not bytes, for")
            try:
                content = bytes(data)
            except TypeError as exc:
                raise _provider_error(provider, res.name,
                                      f"read {type(data).__name__}, not bytes, for") \
                    from exc
            if stamped:
                digest = _remember(res, content)
        rdir = ""
        if provider.getdir is not None:
            try:
                rdir = provider.getdir(res)
            except Exception as exc:
                raise _provider_error(provider, res.name, "failed getdir for", exc) \
                    from exc
            if not isinstance(rdir, str):
                raise _provider_error(provider, res.name,
                                      f"getdir gave {type(rdir).__name__}, not str, for")
        return Loaded(res.name, content, rdir, provider, digest)
    finally:
        try:
            provider.close(res)
        except Exception as exc:
            raise _provider_error(provider, res.name, "failed closing", exc) from exc


def climbs_out(name: str) -> bool:
    """Whether the reduced part of provider name ``name`` after its prefix keeps a
    ".." (a name above the root of the provider's names)."""
    scheme = _scheme(name)
    rest = reduce_path(name)[len(scheme) + 1:]
    return ".." in rest.replace("\\", "/").split("/")


class ResourceReader:
    """Opens named resources for one model: VFS first, then schemes, then files.

    ``modeldir`` is the model file's directory ("" for a model given as text: names
    are then relative to the working directory, as in MuJoCo).
    """

    def __init__(self, modeldir: str = "", assets: Optional[dict] = None):
        if _needs_sep(modeldir):
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

    def open(self, name: str, directory: Optional[str] = None, probe: bool = False,
             reuse: Optional[Callable[[bytes], bool]] = None):
        """The Loaded resource ``name`` (relative to ``directory``, by default the model
        directory), or None; the second result lists what was tried. With ``probe``
        the resource is opened and closed, not read (its content is b"").
        ``reuse(digest) -> bool``: whether the caller still has what it made from the
        bytes of that digest; asked when the provider says, through ``modified``, that
        the resource has not changed since it was read (see the module docstring):
        then it is not read again and the Loaded's content is None.

        A ModelError when a registered provider matches and fails: its open says no
        (unless ``probe``), it raises, or the name climbs above its root."""
        if directory is None:
            directory = self.modeldir
        tried = []
        if self.assets:
            got = _load(Resource(name, VFS_PROVIDER, self), probe)
            if got is not None:
                return got, tried
            tried.append(f"assets dict (no key '{reduce_path(name)}' or file name "
                         f"'{base_part(name)}')")
        else:
            tried.append("assets dict (none given)")
        full = _combine(directory, name)
        provider = get_provider(full)
        if provider is not None:
            if provider is not DATA_PROVIDER:
                if climbs_out(full) and not provider.allow_parent:
                    raise ModelError(
                        f"resource '{full}' climbs above the root of resource provider "
                        f"'{provider.prefix}' with '..'; register the provider with "
                        f"allow_parent=True to let it")
                full = reduce_path(full)
            got = _load(Resource(full, provider), probe, reuse)
            if got is None and probe:  # (not there: the caller may look elsewhere)
                tried.append(f"resource provider '{provider.prefix}' ('{full}': its open "
                             f"returned False)")
                return None, tried
            if got is None:
                raise ModelError(f"could not open '{full}' using the resource provider "
                                 f"'{provider.prefix}' (its open returned False)")
            return got, tried
        res = Resource(full, FILE_PROVIDER)
        got = _load(res, probe)
        if got is None:
            exc = res.data if isinstance(res.data, OSError) else None
            note = f"file '{full}' ({exc.strerror or exc})" if exc else f"file '{full}'"
            unknown = _unregistered_scheme(name)
            if unknown is not None:
                known = ", ".join(f"'{p.prefix}'" for p in _PROVIDERS)
                note += (f"; no resource provider '{unknown}' is registered (registered: "
                         f"{known}), so '{name}' was taken as a file name")
            tried.append(note)
            return None, tried
        return got, tried

    def exists(self, name: str) -> bool:
        """Whether ``name`` (not joined to the model directory) opens. A name a
        provider fails on counts as there, so that reading it reports the failure."""
        try:
            res, _ = self.open(name, "", probe=True)
        except ModelError:
            return True
        return res is not None

    def read(self, name: str, directory: str = "", where=None) -> bytes:
        """Bytes of ``name`` in ``directory`` (relative to the model directory)."""
        full = join_path(directory, name) if directory else name
        try:
            res, tried = self.open(full)
        except ModelError as exc:
            raise _located(exc, where) from exc.__cause__
        if res is None:
            raise missing(name, tried, where)
        return res.content


def _located(exc: ModelError, where) -> ModelError:
    if where is None:
        return exc
    el, attr = where
    return ModelError(exc.detail, file=getattr(el, "xml_file", None),
                      line=getattr(el, "xml_line", None),
                      element=getattr(el, "tag", None), attribute=attr)


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
