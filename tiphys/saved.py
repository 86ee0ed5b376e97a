"""Compiled models saved to a file and loaded without the compiler (mj_saveModel /
mj_loadModel in spirit): ``tiphys.save_model(m, "scene.npz")``, then
``tiphys.load_model("scene.npz")``.

The file is a numpy ``.npz`` archive (no pickled objects): every host array of the
compiled model (``m.arrays``), the parameters set per world (tiphys.set_param), and
one JSON entry with the sizes, the current options (``m.opt``, with whatever was set
since compiling), statistics, visual settings, names and length-range options. It
records the tiphys file format version; a file of another format or version, or one
that is not such an archive, is refused with an error naming the file. Loading builds
the Model as compiling would have left it: the same arrays, names, options and
per-world parameters, so Data made from it steps bit for bit as from the original.
"""
from __future__ import annotations

import dataclasses
import json
import zipfile

import numpy as np

from .errors import ModelError
from .model import Model, ModelArrays
from .plugin import find_plugin, plugin_at

FORMAT = "tiphys-model"
VERSION = 1
_META = "__tiphys_meta__"
_PARAM = "__param__:"


def _plain(value):
    """JSON-able copy: numpy scalars and arrays to numbers and lists."""
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    return value


def _tuples(value):
    """Lists back to tuples (the visual settings hold tuples)."""
    if isinstance(value, dict):
        return {k: _tuples(v) for k, v in value.items()}
    if isinstance(value, list):
        return tuple(_tuples(v) for v in value)
    return value


def save_model(m: Model, path) -> None:
    """Write the compiled model ``m`` to ``path`` (an .npz archive; see the module doc)."""
    a = m.arrays
    arrays = {k: v for k, v in vars(a).items() if isinstance(v, np.ndarray)}
    for name, values in m._params.items():
        arrays[_PARAM + name] = np.asarray(values)
    meta = {
        "format": FORMAT, "version": VERSION,
        "sizes": _plain(a.sizes),
        "opt": _plain(dataclasses.asdict(m.opt.frozen)),
        "stat": _plain(dataclasses.asdict(a.stat)),
        "vis": _plain(a.vis),
        "names": _plain(a.names),
        "model_name": getattr(a, "model_name", ""),
        "lropt": _plain(dataclasses.asdict(a.lropt)) if hasattr(a, "lropt") else None,
        # plugins by name: registry slots are numbered per process (tiphys.plugin)
        "plugins": [plugin_at(int(slot)).name for slot in
                    np.asarray(a.plugin).reshape(-1)[:int(a.sizes.get("nplugin", 0))]],
    }
    arrays[_META] = np.frombuffer(json.dumps(meta).encode(), dtype=np.uint8)
    with open(path, "wb") as f:
        np.savez_compressed(f, **arrays)


def is_saved_model(path) -> bool:
    """Whether ``path`` is a zip archive holding a tiphys model entry."""
    try:
        with zipfile.ZipFile(path) as z:
            return _META + ".npy" in z.namelist()
    except (OSError, zipfile.BadZipFile):
        return False


def load_saved_model(path) -> Model:
    """The Model saved by save_model in ``path``."""
    from .compiler.actuator import LROpt
    from .compiler.options import Option, Statistic
    try:
        archive = np.load(path, allow_pickle=False)
    except (OSError, ValueError, zipfile.BadZipFile) as exc:
        raise ModelError(f"not a saved tiphys model: {exc}", file=str(path)) from None
    with archive:
        if _META not in archive.files:
            raise ModelError("not a saved tiphys model (no model entry); save one with "
                             "tiphys.save_model", file=str(path))
        meta = json.loads(archive[_META].tobytes().decode())
        if meta.get("format") != FORMAT or meta.get("version") != VERSION:
            raise ModelError(f"saved model format {meta.get('format')!r} version "
                             f"{meta.get('version')!r}; this tiphys reads {FORMAT!r} "
                             f"version {VERSION}: save it again from its MJCF", file=str(path))
        a = ModelArrays()
        params = {}
        for name in archive.files:
            if name == _META:
                continue
            if name.startswith(_PARAM):
                params[name[len(_PARAM):]] = archive[name]
            else:
                setattr(a, name, archive[name])
    a.sizes = {k: int(v) for k, v in meta["sizes"].items()}
    opt = {f.name: (tuple(meta["opt"][f.name]) if isinstance(meta["opt"][f.name], list)
                    else meta["opt"][f.name]) for f in dataclasses.fields(Option)}
    a.opt = Option(**opt)
    stat = dict(meta["stat"])
    stat["center"] = np.asarray(stat["center"], dtype=np.float64)
    a.stat = Statistic(**stat)
    a.vis = _tuples(meta["vis"])
    a.names = {k: list(v) for k, v in meta["names"].items()}
    a.model_name = meta["model_name"]
    if meta.get("lropt") is not None:
        a.lropt = LROpt(**meta["lropt"])
    a.lengthrange_pending = []  # the saved model's length ranges are already computed
    if hasattr(a, "names_chars"):  # the names buffer (compiler/names.py), host only
        a.names_buffer = bytes(np.asarray(a.names_chars, dtype=np.uint8))
    slots = []
    for name in meta.get("plugins", []):
        slot, _ = find_plugin(name)
        if slot < 0:
            raise ModelError(f"the saved model uses plugin '{name}', which is not "
                             f"registered (tiphys.register_plugin)", file=str(path))
        slots.append(slot)
    if slots:
        a.plugin = np.array(slots, dtype=np.int32)
    m = Model(a)
    if params:
        from .params import set_param
        for name, values in params.items():
            set_param(m, name, values)
    return m
