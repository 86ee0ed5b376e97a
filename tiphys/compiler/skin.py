"""<skin>: skinned meshes for rendering, from a SKN file or inline data.

Follows MuJoCo 3.4.0's mjXReader::OneSkin (src/xml/xml_native_reader.cc) and
mjCSkin::Compile/LoadSKN (src/user/user_mesh.cc), and how mjCModel::CopyObjects lays
the skins out in mjModel (src/user/user_model.cc). MuJoCo adds skins in this order:
every ``<asset><skin>``, then every ``<deformable><skin>``. Skin data is single
precision in MuJoCo (mjsSkin's float vectors), so vertices, texture coordinates,
bind poses and weights are rounded to float32 here, and the vertex weights are
normalized in float32 as MuJoCo normalizes them.

Where tiphys deviates: a face index outside the skin's vertices is an error (MuJoCo
3.4.0 compiles it, and its renderer then reads past the skin's vertices).
"""
from __future__ import annotations

import numpy as np

from ..errors import ModelError, error_at
from .attrs import Attrs

_MINVAL = 1e-15  # mjMINVAL
_EPS = 1e-14  # mjEPS
_NGROUP = 6  # mjNGROUP


class SkinData:
    """One skin as MuJoCo's mjCSkin holds it before it is copied into the model."""

    def __init__(self, el, name: str):
        self.el = el
        self.name = name
        self.file = None
        self.material = ""
        self.group = 0
        self.rgba = np.array([0.5, 0.5, 0.5, 1.0], dtype=np.float32)
        self.inflate = np.float32(0.0)
        self.vert = np.zeros(0, dtype=np.float32)
        self.texcoord = np.zeros(0, dtype=np.float32)
        self.face = np.zeros(0, dtype=np.int64)
        self.bodyname: list[str] = []
        self.bindpos = np.zeros(0, dtype=np.float32)
        self.bindquat = np.zeros(0, dtype=np.float32)
        self.vertid: list[np.ndarray] = []
        self.vertweight: list[np.ndarray] = []
        self.bone_els: list = []  # the <bone> elements of an inline skin
        # compiled
        self.matid = -1
        self.bodyid: list[int] = []


def skin_elements(spec) -> list:
    """The <skin> elements in MuJoCo's order: <asset> sections, then <deformable>."""
    return [child for tag in ("asset", "deformable") for section in spec.sections(tag)
            for child in section.children if child.tag == "skin"]


def _basename(path: str) -> str:
    cut = max(path.rfind("/"), path.rfind("\\"))
    return path[cut + 1:]


def _stripext(path: str) -> str:
    dot = path.rfind(".")
    return path if dot < 0 else path[:dot]


def skin_name(el) -> str:
    """A skin's name: its name attribute, else its file name without directory and
    extension (mjCSkin::CopyFromSpec)."""
    name = el.attr("name")
    if name:
        return name
    file = el.attr("file") or ""
    return _stripext(_basename(file))


def read_skin(el) -> SkinData:
    """The attributes and bones of one <skin> element (mjXReader::OneSkin)."""
    a = Attrs(el)
    sk = SkinData(el, skin_name(el))
    sk.file = a.str("file") or None  # (file="" is no file)
    sk.material = a.str("material", "")
    sk.group = a.int("group", 0)
    if not 0 <= sk.group < _NGROUP:
        raise a.error("skin group must be between 0 and 5", "group")
    sk.rgba = np.asarray(a.floats("rgba", 4, (0.5, 0.5, 0.5, 1.0)), dtype=np.float32)
    sk.inflate = np.float32(a.float("inflate", 0.0))
    for attr, dtype in (("vertex", np.float32), ("texcoord", np.float32)):
        values = a.floats(attr)
        if values is not None:
            setattr(sk, "vert" if attr == "vertex" else attr, values.astype(dtype))
    face = a.ints("face")
    if face is not None:
        sk.face = face
    bindpos, bindquat = [], []
    for bone in el.find("bone"):
        b = Attrs(bone)
        for attr in ("body", "bindpos", "bindquat", "vertid", "vertweight"):
            if not b.has(attr):
                raise b.error("missing required attribute", attr)
        sk.bone_els.append(bone)
        sk.bodyname.append(b.str("body"))
        bindpos.extend(b.floats("bindpos", 3))
        bindquat.extend(b.floats("bindquat", 4))
        vid = b.ints("vertid")
        sk.vertid.append(np.zeros(0, np.int64) if vid is None else vid)
        vw = b.floats("vertweight")
        sk.vertweight.append(np.zeros(0, np.float32) if vw is None else vw.astype(np.float32))
    sk.bindpos = np.asarray(bindpos, dtype=np.float32)
    sk.bindquat = np.asarray(bindquat, dtype=np.float32)
    return sk


def _has_inline_data(sk: SkinData) -> bool:
    return bool(sk.vert.size or sk.texcoord.size or sk.face.size or sk.bodyname
                or sk.bindpos.size or sk.bindquat.size or sk.vertid or sk.vertweight)


def load_skn(sk: SkinData, data: bytes, fname: str) -> None:
    """Vertices, texture coordinates, faces and bones from SKN bytes (mjCSkin::LoadSKN):
    a header of four int32 counts (vertices, texcoords, faces, bones), then float32
    vertices (3 each), float32 texcoords (2 each), int32 faces (3 each), and per bone
    a 40-byte body name, bindpos (3 float32), bindquat (4 float32), a vertex count n,
    then n int32 vertex ids and n float32 weights."""
    def fail(message):
        return error_at(sk.el, message, "file")

    size = len(data)
    if size == 0:
        raise fail(f"SKN file '{fname}' is empty")
    if size < 16:
        raise fail(f"missing header in SKN file '{fname}'")
    nvert, ntexcoord, nface, nbone = (int(v) for v in np.frombuffer(data, "<i4", 4))
    if nvert < 0 or ntexcoord < 0 or nface < 0 or nbone < 0:
        raise fail(f"negative size in header of SKN file '{fname}'")
    if size < 16 + 12 * nvert + 8 * ntexcoord + 12 * nface:
        raise fail(f"insufficient data in SKN file '{fname}'")
    words = size // 4
    f32 = np.frombuffer(data, "<f4", words)
    i32 = np.frombuffer(data, "<i4", words)
    cnt = 4  # in words, from the start of the buffer (MuJoCo counts from the header)
    sk.vert = f32[cnt:cnt + 3 * nvert].copy()
    cnt += 3 * nvert
    sk.texcoord = f32[cnt:cnt + 2 * ntexcoord].copy()
    cnt += 2 * ntexcoord
    sk.face = i32[cnt:cnt + 3 * nface].astype(np.int64)
    cnt += 3 * nface
    sk.bodyname, sk.vertid, sk.vertweight = [], [], []
    bindpos, bindquat = [], []
    for boneid in range(nbone):
        if words - cnt < 18:
            raise fail(f"insufficient data in SKN file '{fname}', bone {boneid}")
        raw = data[4 * cnt:4 * cnt + 39]
        sk.bodyname.append(raw.split(b"\0", 1)[0].decode("utf-8", "replace"))
        cnt += 10
        bindpos.extend(f32[cnt:cnt + 3])
        cnt += 3
        bindquat.extend(f32[cnt:cnt + 4])
        cnt += 4
        vcount = int(i32[cnt])
        cnt += 1
        if vcount < 1:
            raise fail(f"vertex count must be positive in SKN file '{fname}', bone {boneid}")
        if words - cnt < 2 * vcount:
            raise fail(f"insufficient vertex data in SKN file '{fname}', bone {boneid}")
        sk.vertid.append(i32[cnt:cnt + vcount].astype(np.int64))
        cnt += vcount
        sk.vertweight.append(f32[cnt:cnt + vcount].copy())
        cnt += vcount
    if size != 4 * cnt:
        raise fail(f"unexpected buffer size in SKN file '{fname}'")
    sk.bindpos = np.asarray(bindpos, dtype=np.float32)
    sk.bindquat = np.asarray(bindquat, dtype=np.float32)


def compile_skin(sk: SkinData, skinid: int, files, strippath: bool, body_ids: dict,
                 assets) -> None:
    """Load, check and normalize one skin (mjCSkin::Compile)."""
    el = sk.el
    if sk.material:  # (mjCModel::IndexAssets: before the skins compile)
        if assets.discard:  # (MuJoCo 3.4.0 drops the material and then fails)
            raise error_at(el, f"material '{sk.material}' of a skin with discardvisual: "
                               f"MuJoCo 3.4.0 rejects it (object not found)", "material")
        try:
            sk.matid = assets.material_id(sk.material, el)
        except ModelError:
            raise error_at(el, f"material '{sk.material}' not found in skin {skinid}",
                           "material") from None
    if sk.file is not None:
        if _has_inline_data(sk):
            raise error_at(el, f"Both skin data and file were specified: {sk.file}", "file")
        fname = _basename(sk.file) if strippath else sk.file
        dot = fname.rfind(".")
        if dot < 0 or fname[dot:].lower() != ".skn":
            raise error_at(el, f"Unknown skin file type: {fname}", "file")
        load_skn(sk, files.read(el, "file", sk.file, "skin"), fname)
    if not (sk.vert.size and sk.face.size and sk.bodyname and sk.bindpos.size
            and sk.bindquat.size and sk.vertid and sk.vertweight):
        raise error_at(el, "Missing data in skin")
    if sk.vert.size % 3:
        raise error_at(el, "Vertex data must be multiple of 3", "vertex")
    if sk.texcoord.size and sk.texcoord.size != 2 * (sk.vert.size // 3):
        raise error_at(el, "Vertex and texcoord data incompatible size", "texcoord")
    if sk.face.size % 3:
        raise error_at(el, "Face data must be multiple of 3", "face")
    nbone = len(sk.bodyname)
    # (inline bones always give 3 + 4 numbers and a vertid/vertweight each; a SKN
    # file's sizes are fixed by its layout: MuJoCo's bone size checks cannot fail)
    def at_bone(boneid, message, attribute):
        """An error located at the <bone> element (a SKN file's: at the file)."""
        if sk.file is not None or boneid >= len(sk.bone_els):
            return error_at(el, message, "file" if sk.file is not None else None)
        return error_at(sk.bone_els[boneid], message, attribute)

    sk.bodyid = []
    for boneid, name in enumerate(sk.bodyname):
        if name not in body_ids:
            raise at_bone(boneid, f"unknown body '{name}' in skin", "body")
        sk.bodyid.append(body_ids[name])
    nvert = sk.vert.size // 3
    total = np.zeros(nvert, dtype=np.float32)
    for boneid, (vid, vw) in enumerate(zip(sk.vertid, sk.vertweight)):
        if vw.size != vid.size or vid.size == 0:
            raise at_bone(boneid, "vertid and vertweight must have same non-zero size in "
                                  "skin", "vertweight")
        bad = (vid < 0) | (vid >= nvert)
        if bad.any():
            raise at_bone(boneid, f"vertid {int(vid[np.argmax(bad)])} out of range in skin",
                          "vertid")
        # float32 sums in MuJoCo's order (bone by bone, vertex by vertex); np.add.at
        # adds repeated ids one after the other
        np.add.at(total, vid, vw)
    low = np.flatnonzero(total.astype(np.float64) <= _MINVAL)
    if low.size:
        raise error_at(el, f"vertex {int(low[0])} must have positive total weight in skin")
    sk.vertweight = [(vw / total[vid]).astype(np.float32)
                     for vid, vw in zip(sk.vertid, sk.vertweight)]
    if sk.face.size:
        badf = (sk.face < 0) | (sk.face >= nvert)
        if badf.any():  # (tiphys: MuJoCo 3.4.0 does not check)
            raise error_at(el, f"face vertex index {int(sk.face[np.argmax(badf)])} out of "
                               f"range in skin with {nvert} vertices", "face")
    quat = sk.bindquat.astype(np.float64).reshape(nbone, 4)
    for q in quat:  # mjuu_normvec
        nrm2 = float(q @ q)
        if nrm2 < _EPS:
            continue
        nrm = np.sqrt(nrm2)
        if abs(nrm - 1) > _EPS:
            q /= nrm
    sk.bindquat = quat.reshape(-1).astype(np.float32)


def compile_skins(spec, builder, assets, ctx, out) -> list:
    """Every skin of the model (<asset>, <deformable>, then the box cables') into
    out.skin_* and its sizes; returns them."""
    from .composite import composite_skins
    bodies = builder.bodies
    els = skin_elements(spec)
    cables = composite_skins(builder)
    attached = [el for el in els if getattr(el, "attached_skin", False)]
    if attached and cables:  # (MuJoCo adds both as it reads <worldbody>, interleaved)
        raise NotImplementedError(
            f"{attached[0].xml_file or '<string>'}:{attached[0].xml_line}: a skin of an "
            f"attached model together with a box <composite> cable's skin is not "
            f"supported yet")
    skins = [read_skin(el) for el in els] + cables
    body_ids = {}
    for bodyid, b in enumerate(bodies):
        if b.name:
            body_ids.setdefault(b.name, bodyid)
    for skinid, sk in enumerate(skins):
        compile_skin(sk, skinid, assets.files, ctx.strippath, body_ids, assets)
    _fill_skins(out, skins)
    return skins


def _adr(counts) -> np.ndarray:
    return np.cumsum([0] + list(counts))[:-1].astype(np.int32)


def _fill_skins(out, skins) -> None:
    f, i = np.float64, np.int32
    nvert = [sk.vert.size // 3 for sk in skins]
    ntex = [sk.texcoord.size // 2 for sk in skins]
    nface = [sk.face.size // 3 for sk in skins]
    nbone = [len(sk.bodyid) for sk in skins]
    tadr = _adr(ntex)
    out.skin_matid = np.array([sk.matid for sk in skins], dtype=i)
    out.skin_group = np.array([sk.group for sk in skins], dtype=i)
    out.skin_rgba = np.array([sk.rgba for sk in skins], dtype=f).reshape(-1, 4)
    out.skin_inflate = np.array([sk.inflate for sk in skins], dtype=f)
    out.skin_vertadr = _adr(nvert)
    out.skin_vertnum = np.array(nvert, dtype=i)
    out.skin_texcoordadr = np.array([tadr[k] if ntex[k] else -1 for k in range(len(skins))],
                                    dtype=i)
    out.skin_faceadr = _adr(nface)
    out.skin_facenum = np.array(nface, dtype=i)
    out.skin_boneadr = _adr(nbone)
    out.skin_bonenum = np.array(nbone, dtype=i)

    def cat(parts, width, dtype):
        parts = [np.asarray(p, dtype=dtype).reshape(-1, width) for p in parts]
        return np.concatenate(parts) if parts else np.zeros((0, width), dtype=dtype)

    out.skin_vert = cat([sk.vert for sk in skins], 3, f)
    out.skin_texcoord = cat([sk.texcoord for sk in skins], 2, f)
    out.skin_face = cat([sk.face for sk in skins], 3, i)
    bonevertnum = [v.size for sk in skins for v in sk.vertid]
    out.skin_bonevertadr = _adr(bonevertnum)
    out.skin_bonevertnum = np.array(bonevertnum, dtype=i)
    out.skin_bonebindpos = cat([sk.bindpos for sk in skins], 3, f)
    out.skin_bonebindquat = cat([sk.bindquat for sk in skins], 4, f)
    out.skin_bonebodyid = np.array([b for sk in skins for b in sk.bodyid], dtype=i)
    out.skin_bonevertid = cat([v for sk in skins for v in sk.vertid], 1, i).reshape(-1)
    out.skin_bonevertweight = cat([w for sk in skins for w in sk.vertweight], 1,
                                  f).reshape(-1)
    from .compile import _setsize
    _setsize(out, nskin=len(skins), nskinvert=sum(nvert), nskintexvert=sum(ntex),
             nskinface=sum(nface), nskinbone=sum(nbone),
             nskinbonevert=int(sum(bonevertnum)))
