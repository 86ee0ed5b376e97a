"""Readable dumps of a Model and of one world of a Data (mj_printModel, mj_printData),
as rich tables.

The text is not MuJoCo's byte for byte, but it holds what MuJoCo's holds: sizes,
options, statistics, the total mass, then every model field grouped per object
(``BODY 3 (torso)``: body_parentid, body_pos, ...) and the remaining arrays; for Data
the world's sizes and warnings, every state and result array, and the contacts and
constraint rows that world has. Both tables come from types.py, so a field added there
is printed without a change here.
"""
from __future__ import annotations

import io
import os
from dataclasses import fields as dc_fields

import numpy as np
import taichi as ti
from rich.console import Console
from rich.table import Table

from .kernels import support as _k
from .kernels.consts import WARNING_NAMES
from .model import Data, Model
from .types import DATA_EXTRA_FIELDS, DATA_FIELDS, MODEL_EXTRA_FIELDS, MODEL_FIELDS, \
    MODEL_SIZES, numpy_shape, parse_shape

# first dimension of a model field -> (section title, names key of the object)
_OBJECTS = {
    "nbody": ("BODY", "body"), "njnt": ("JOINT", "joint"), "nv": ("DOF", None),
    "ntree": ("TREE", None), "ngeom": ("GEOM", "geom"), "nsite": ("SITE", "site"),
    "ncam": ("CAMERA", "camera"), "nlight": ("LIGHT", "light"), "nmesh": ("MESH", "mesh"),
    "nhfield": ("HFIELD", "hfield"), "ntex": ("TEXTURE", "texture"),
    "nmat": ("MATERIAL", "material"), "npair": ("PAIR", "pair"),
    "nexclude": ("EXCLUDE", "exclude"), "neq": ("EQUALITY", "equality"),
    "ntendon": ("TENDON", "tendon"), "nu": ("ACTUATOR", "actuator"),
    "nsensor": ("SENSOR", "sensor"), "nnumeric": ("NUMERIC", "numeric"),
    "ntext": ("TEXT", "text"), "ntuple": ("TUPLE", "tuple"), "nkey": ("KEYFRAME", "key"),
}
# Data arrays listed up to the world's contact / constraint count
_ROWS_OF = {"nconmax": "ncon", "njmax": "nefc", "njnnz": "nJ", "nislandmax": "nisland"}
_DATA_SIZES = ("ncon", "ne", "nf", "nl", "nefc", "nJ", "nisland", "nidof",
               "contact_overflow", "efc_overflow")


def _fmt(value) -> str:
    """Numbers as MuJoCo prints them: ints as ints, floats in %g, rows on lines."""
    a = np.asarray(value)
    if a.ndim == 0:
        v = a.item()
        return str(v) if isinstance(v, (int, np.integer)) else f"{v:.6g}"
    if a.ndim == 1:
        return " ".join(_fmt(x) for x in a)
    return "\n".join(_fmt(row) for row in a.reshape(a.shape[0], -1))


def _table(title: str, rows, headers=("field", "value")) -> Table:
    table = Table(title=title, title_justify="left", show_header=False, box=None,
                  pad_edge=False)
    for _ in headers:
        table.add_column(overflow="fold")
    for row in rows:
        table.add_row(*row)
    return table


class _Out:
    """Where the text goes: None (stdout), a file name (written), or a text file."""

    def __init__(self, file):
        self.file = file
        self.buffer = io.StringIO()
        self.console = Console(file=self.buffer, width=120, color_system=None,
                               force_terminal=False, highlight=False)

    def close(self) -> str:
        text = self.buffer.getvalue()
        if self.file is None:
            Console(highlight=False).print(text, end="", markup=False)
        elif isinstance(self.file, (str, os.PathLike)):
            with open(self.file, "w", encoding="utf-8") as f:
                f.write(text)
        else:
            self.file.write(text)
        return text


def print_model(m: Model, file=None) -> str:
    """Every size, option, statistic and model field of ``m``, as mj_printModel.

    ``file``: None prints to the terminal, a path writes that file (as MuJoCo's
    filename argument), a text stream is written to. Returns the text.
    """
    out = _Out(file)
    c = out.console
    a = m.arrays
    c.print("tiphys model (MuJoCo 3.4.0 compatible)")
    c.print(_table("SIZES", [(name, str(getattr(m, name))) for name in MODEL_SIZES]))
    opt = m.opt.frozen  # the current options (set field by field since compiling)
    c.print(_table("OPTION", [(f.name, _fmt(getattr(opt, f.name))) for f in dc_fields(opt)]))
    c.print(_table("", [("totalmass", _fmt(np.sum(np.asarray(a.body_mass)[1:m.nbody])))]))
    if m.param_worlds():  # the fields below show the compiled values of these
        c.print(_table("PER-WORLD PARAMETERS (tiphys.set_param; compiled values below)",
                       [(name, f"{n} sets") for name, n in sorted(m.param_worlds().items())]))
    c.print(_table("STATISTIC", [(k, _fmt(v)) for k, v in vars(a.stat).items()]))
    groups, loose = {}, []
    for name, shape, _, _ in MODEL_FIELDS + MODEL_EXTRA_FIELDS:
        dims = [t for t in parse_shape(shape)[0] if t != "*"]
        if dims and dims[0] in _OBJECTS:
            groups.setdefault(dims[0], []).append(name)
        else:
            loose.append((name, shape))
    c.print(_table("ARRAYS", [(name, _fmt(np.asarray(getattr(a, name)).reshape(-1))
                               if np.size(getattr(a, name)) else "(empty)")
                              for name, _ in loose]))
    for size, names in groups.items():
        title, key = _OBJECTS[size]
        labels = m.names.get(key, []) if key else []
        values = {name: np.asarray(getattr(a, name)) for name in names}
        for i in range(getattr(m, size)):
            label = labels[i] if i < len(labels) and labels[i] else ""
            rows = [(name, _fmt(values[name].reshape(values[name].shape[0], -1)[i]))
                    for name in names if values[name].size]
            c.print(_table(f"{title} {i}" + (f" ({label})" if label else ""), rows))
    return out.close()


def _world_numpy(arr, world: int) -> np.ndarray:
    """One world of a Data array, copied on the device first (not every world)."""
    shape = tuple(arr.shape[1:]) or (1,)
    elem = tuple(arr.element_shape)
    if not elem:
        dst = ti.ndarray(arr.dtype, shape)
    elif len(elem) == 1:
        dst = ti.Vector.ndarray(elem[0], arr.dtype, shape)
    else:
        dst = ti.Matrix.ndarray(elem[0], elem[1], arr.dtype, shape)
    _k.world_slice(arr, world, len(arr.shape) - 1, dst)
    out = dst.to_numpy()
    return out[0] if len(arr.shape) == 1 else out


def print_data(m: Model, d: Data, file=None, world: int = 0) -> str:
    """Every state and result array of one world of ``d``, as mj_printData: sizes,
    warnings, then each Data field (contacts and constraint rows up to that world's
    ncon / nefc). ``file`` as print_model. Returns the text."""
    try:
        w = int(world)
    except (TypeError, ValueError):
        raise ValueError(f"print_data: world must be an int, got {world!r}") from None
    if w != world or not 0 <= w < d.nworld:
        raise IndexError(f"print_data: world {world!r} out of range (nworld={d.nworld})")
    out = _Out(file)
    c = out.console
    c.print(f"tiphys data: world {w} of {d.nworld}")
    counts = {name: int(_world_numpy(getattr(d, name), w)) for name in _DATA_SIZES
              if hasattr(d, name)}
    c.print(_table("SIZES", [(k, str(v)) for k, v in counts.items()] +
                   [("nconmax", str(d.nconmax)), ("njmax", str(d.njmax))] +
                   ([("njnnz", str(d.njnnz))] if d.njnnz else [])))
    number = _world_numpy(d.warning_number, w)
    lastinfo = _world_numpy(d.warning_lastinfo, w)
    c.print(_table("WARNING", [(name, f"number {number[i]}  lastinfo {lastinfo[i]}")
                               for i, name in enumerate(WARNING_NAMES)]))
    rows = []
    for name, shape, _, _ in DATA_FIELDS + DATA_EXTRA_FIELDS:
        if name in counts or name.startswith("warning_"):
            continue
        want = numpy_shape(shape, d._sizes, 1)[1:]
        dims = parse_shape(shape)[0][1:]
        if dims and dims[0] in _ROWS_OF:
            want = (min(want[0], counts.get(_ROWS_OF[dims[0]], want[0])),) + want[1:]
        if 0 in want:
            continue
        value = _world_numpy(getattr(d, name), w)
        value = value.reshape(-1)[:1] if not want else \
            value[tuple(slice(0, n) for n in want)]
        text = _fmt(value.reshape(value.shape[0], -1) if value.ndim > 1 else value)
        rows.append((name.upper(), text))
    c.print(_table("ARRAYS", rows))
    return out.close()



def print_schema(html: bool = False, pad: bool = False) -> str:
    """The MJCF schema tiphys reads, as mj_printSchema prints MuJoCo's: each element
    with its multiplicity (! one, ? at most one, * any, R recursive) and its
    attributes, as plain text, or as an HTML table (``pad``: indentation by CSS
    padding instead of &nbsp;). Returns the text."""
    from .spec.schema import SCHEMA
    out = []

    def text(name, node, level):
        name1 = "(world)body" if name == "body" else name
        line = " " * (3 * level) + f"{name1} ({node['mult']})"
        base = 3 * level + len(name1) + 4
        line += " " * max(0, 30 - base)
        count = max(base, 30)
        for attr in sorted(node["attrs"]):
            if count > 60:
                count = max(30, base)
                line += "\n" + " " * count
            line += attr + " "
            count += len(attr) + 1
        out.append(line + "\n")
        for child, sub in (node.get("children") or {}).items():
            text(child, sub, level + 1)

    def table(name, node, level):
        name1 = "(world)body" if name == "body" else name
        if level == 0:
            out.append('<table border="1">\n')
        if pad:
            out.append(f'<tr>\n\t<td style="padding-left:{5 + 15 * level}" '
                       f'bgcolor="#EEEEEE" class="el">{name1}</td>\n')
        else:
            out.append('<tr>\n\t<td bgcolor="#EEEEEE" class="el">' + "&nbsp;" * (4 * level)
                       + f"{name1}</td>\n")
        out.append(f'\t<td class="ty">{node["mult"]}</td>\n')
        attrs = sorted(node["attrs"])
        out.append('\t<td class="at">' + ("".join(a + " " for a in attrs) if attrs else
                   '<span style="color:black"><i>no attributes</i></span>') + "</td>\n</tr>\n")
        for child, sub in (node.get("children") or {}).items():
            table(child, sub, level + 1)
        if level == 0:
            out.append("</table>\n")

    (table if html else text)("mujoco", SCHEMA, 0)
    return "".join(out)
