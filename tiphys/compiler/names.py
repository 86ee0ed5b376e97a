"""names, names_map, name_*adr, paths and the assets' *_pathadr, as MuJoCo 3.4.0's
mjCModel::CopyNames and CopyPaths lay them out.

``names`` is the model name and then every object's name, 0-terminated, list by list
in mjtObj order (an unnamed object is an empty string); ``names_map`` holds, for each
list, 2 slots per object (mjLOAD_MULTIPLE), each named object placed at its name's
hash (mj_hashString: djb2 with xor over the name's signed chars) and linear probing
after it, -1 elsewhere; mj_name2id looks names up through it. ``paths`` holds the
file each height field, mesh, skin and texture was read from, as the reader kept it
(the name as written, or put under the including file's directory when not found
under the model's) and after strippath, before the compiler's directories are put
in front."""
from __future__ import annotations

import numpy as np

# (key in ModelArrays.names, name_*adr field): mjCModel::CopyNames's order
NAME_LISTS = (("body", "name_bodyadr"), ("joint", "name_jntadr"), ("geom", "name_geomadr"),
              ("site", "name_siteadr"), ("camera", "name_camadr"), ("light", "name_lightadr"),
              ("flex", "name_flexadr"), ("mesh", "name_meshadr"), ("skin", "name_skinadr"),
              ("hfield", "name_hfieldadr"), ("texture", "name_texadr"),
              ("material", "name_matadr"), ("pair", "name_pairadr"),
              ("exclude", "name_excludeadr"), ("equality", "name_eqadr"),
              ("tendon", "name_tendonadr"), ("actuator", "name_actuatoradr"),
              ("sensor", "name_sensoradr"), ("numeric", "name_numericadr"),
              ("text", "name_textadr"), ("tuple", "name_tupleadr"), ("key", "name_keyadr"),
              ("plugin", "name_pluginadr"))
LOAD_MULTIPLE = 2
_MASK = (1 << 64) - 1


def hash_string(name: str, n: int) -> int:
    """mj_hashString: h = (h * 33) ^ c over the name's bytes read as signed chars
    (sign-extended to 64 bits), modulo n."""
    h = 5381
    data = name.encode()
    if data.isascii():  # (every byte below 128: the char is the byte itself)
        for c in data:
            h = ((h * 33) & _MASK) ^ c
        return h % n
    for byte in data:
        c = byte - 256 if byte > 127 else byte
        h = ((h * 33) & _MASK) ^ (c & _MASK)
    return h % n


def fill_names(out, model_name: str, fields: set) -> None:
    """names, names_map and each name_*adr in ``fields`` (the lists the model has)."""
    chunks = [model_name.encode() + b"\0"]
    adr = len(chunks[0])
    names_map = []
    for kind, field in NAME_LISTS:
        lst = [n or "" for n in out.names.get(kind, ())]
        if kind == "key":  # keyframes <size nkey> adds have no element and no name
            lst += [""] * (int(out.__dict__.get("_size_nkey", 0)) - len(lst))
        if not lst:  # (most lists of a model: nothing to hash or lay out)
            if field in fields:
                setattr(out, field, np.zeros(0, dtype=np.int32))
            continue
        size = LOAD_MULTIPLE * len(lst)
        slots = [-1] * size
        for i, name in enumerate(lst):
            if not name:
                continue
            j = hash_string(name, size)
            while slots[j] != -1:
                j = (j + 1) % size
            slots[j] = i
        names_map += slots
        starts = []
        for name in lst:
            starts.append(adr)
            data = name.encode() + b"\0"
            chunks.append(data)
            adr += len(data)
        if field in fields:
            setattr(out, field, np.array(starts, dtype=np.int32))
    names = b"".join(chunks)
    out.names_buffer = names
    out.names_chars = np.frombuffer(names, dtype=np.uint8).astype(np.int32)
    out.names_map = np.array(names_map, dtype=np.int32)
    values = out.__dict__
    values["_size_nnames"], values["_size_nnames_map"] = len(names), len(names_map)


def fill_paths(out, lists) -> None:
    """paths and the *_pathadr fields from ``lists``: (field, [stored file or None])
    in CopyPaths's order (height fields, meshes, skins, textures)."""
    chunks, adr = [], 0
    for field, files in lists:
        starts = []
        for file in files:
            if not file:
                starts.append(-1)
                continue
            starts.append(adr)
            data = file.encode() + b"\0"
            chunks.append(data)
            adr += len(data)
        setattr(out, field, np.array(starts, dtype=np.int32))
    paths = b"".join(chunks) or b"\0"
    out.paths = np.frombuffer(paths, dtype=np.uint8).astype(np.int32)
    out.__dict__["_size_npaths"] = len(paths)
