"""<asset>: meshes, height fields, textures and materials; geom references to them."""
from __future__ import annotations

import os

import numpy as np

from ..errors import ModelError, error_at
from ..io.resources import base_part, is_abs, join_path, missing, reduce_path
from ..kernels.consts import (GEOM_HFIELD, GEOM_MESH, GEOM_SDF, TEXROLE_EMISSIVE,
                              TEXROLE_METALLIC, TEXROLE_NORMAL, TEXROLE_OCCLUSION,
                              TEXROLE_OPACITY, TEXROLE_ORM, TEXROLE_RGB, TEXROLE_RGBA,
                              TEXROLE_ROUGHNESS, TEXROLE_USER)
from . import mesh_builtin
from . import rotation as rot
from .attrs import BOOL, Attrs
from .hfield import compile_hfield, hfield_cached
from .mesh import compile_mesh, compile_mesh_geometry, finish_mesh, mesh_cached
from .polygons import polygon_arrays
from .texture import compile_texture
from .empty import replay_empty

# MJCF <layer role> -> mjtTextureRole
TEXTURE_ROLES = {"user": TEXROLE_USER, "rgb": TEXROLE_RGB, "occlusion": TEXROLE_OCCLUSION,
                 "roughness": TEXROLE_ROUGHNESS, "metallic": TEXROLE_METALLIC,
                 "normal": TEXROLE_NORMAL, "opacity": TEXROLE_OPACITY,
                 "emissive": TEXROLE_EMISSIVE, "rgba": TEXROLE_RGBA, "orm": TEXROLE_ORM}
MESH_INERTIA = ("convex", "exact", "legacy", "shell")


def _data_uri_type(name):
    """Media type of a ``data:`` URI (e.g. ``model/stl``), else None."""
    if name and name[:5].lower() == "data:":
        head = name[5:].split(",", 1)[0].split(";")[0].strip()
        return head or None
    return None


def _class_of(el, defaults) -> str:
    """The default class of an asset; class="" is an unknown class, as in MuJoCo."""
    cls = el.attr("class")
    if cls is None:
        return "main"
    defaults.check_class(cls, el)
    return cls


def _stem(path: str) -> str:
    return os.path.splitext(os.path.basename(path.replace("\\", "/")))[0]


class AssetFiles:
    """Where MuJoCo 3.4.0 finds the file an asset names, in two steps.

    1. When the XML is read (src/xml/xml_native_reader.cc, ReadAttrFile ->
       ResolveFilePath in src/xml/xml_util.cc), a relative name is kept as written if
       it opens as model directory + reader directory + name; otherwise it becomes
       the directory of the file that included the element + name (just the name in
       the main file). The reader directory is the last value, in document order and
       counting included files, of meshdir (meshes) or texturedir (textures, cube
       faces), either falling back to assetdir when empty; height fields and skins
       use assetdir alone (mjXReader::MeshDir/TextureDir/AssetDir), and a
       ``<flexcomp file>`` none: it is probed as model directory + name
       (mjXReader::OneFlexcomp passes the bare model directory).
    2. When the asset compiles (mjCMesh/mjCHField/mjCSkin/mjCTexture::Compile in
       src/user/user_mesh.cc and user_objects.cc; mjCFlexcomp::MakeMesh/MakeGMSH in
       user_flexcomp.cc), strippath keeps only the file name, then the compiler's
       meshdir (meshes, height fields, skins, flexcomp files) or texturedir
       (textures) is put in front unless the name is absolute, and the result is
       opened relative to the model directory (mju_openResource). Here the
       compiler's directories are those of the <compiler> elements applied in order,
       assetdir setting both and meshdir/texturedir overriding it.

    So a flexcomp file in an included file, with meshdir "m", is read from
    model directory + "m/" + name when model directory + name exists (even if that
    one does not: then loading fails), else from the including file's directory +
    name, where meshdir is not put in front of an absolute including directory.

    Every name is reduced ("a/./b/../c" -> "a/c") as MuJoCo's FilePath does.
    """

    COMPILE_DIR = {"mesh": "meshdir", "hfield": "meshdir", "skin": "meshdir",
                   "flexcomp": "meshdir", "texture": "texturedir"}

    def __init__(self, spec, ctx):
        self.reader = spec.reader()
        self.strippath = ctx.strippath
        last = {"assetdir": "", "meshdir": "", "texturedir": ""}
        for el in spec.sections("compiler"):
            for attr in last:
                if el.attr(attr) is not None:
                    last[attr] = el.attr(attr)
        mesh_attr = "meshdir" if last["meshdir"] else "assetdir"
        tex_attr = "texturedir" if last["texturedir"] else "assetdir"
        self.parse_dir = {"mesh": (mesh_attr, last[mesh_attr]),
                          "texture": (tex_attr, last[tex_attr]),
                          "hfield": ("assetdir", last["assetdir"]),
                          "skin": ("assetdir", last["assetdir"]),
                          "flexcomp": ("", "")}
        self.compile_dir = {"mesh": ctx.meshdir, "hfield": ctx.meshdir, "skin": ctx.meshdir,
                            "flexcomp": ctx.meshdir, "texture": ctx.texturedir}

    def stored(self, el, file: str, kind: str, notes=None, strippath=None) -> str:
        """The name MuJoCo keeps for ``file`` of ``el`` (step 1 and strippath: its
        ``paths`` entry), before the compiler's directory is put in front.
        ``strippath``: the setting of the model that compiles the asset, if not this
        one's (an <attach>ed model's assets compile with the parent's)."""
        name = reduce_path(file)
        if not is_abs(name):
            attr, pdir = self.parse_dir[kind]
            first = join_path(join_path(self.reader.modeldir, pdir), name)
            incdir = getattr(el, "xml_incdir", "") or ""
            where = f"model directory + {attr}='{pdir}'" if pdir else "model directory"
            if not self.reader.exists(first):
                if incdir and notes is not None:
                    notes.append(f"not found as '{first}' ({where}), so taken relative to "
                                 f"the including file's directory '{incdir}'")
                name = join_path(incdir, name)
            elif incdir and notes is not None:
                notes.append(f"found as '{first}' ({where}), so not taken relative to the "
                             f"including file's directory '{incdir}'")
        if self.strippath if strippath is None else strippath:
            name = base_part(name)
        return name

    def name(self, el, file: str, kind: str, strippath=None):
        """(the name MuJoCo opens, a note on how it was found) for ``file`` of ``el``
        (``strippath``: as for ``stored``)."""
        if "attach_file_sources" in el.__dict__:  # (attach.py: found as its model does)
            return file, "the file of an <attach>ed model, from that model's directories"
        notes = []
        name = self.stored(el, file, kind, notes, strippath)
        cdir = self.compile_dir[kind]
        if cdir and not is_abs(name):
            notes.append(f"{self.COMPILE_DIR[kind]}='{cdir}'")
        name = join_path(cdir, name)
        if not is_abs(name):
            notes.append(f"model directory '{self.reader.modeldir or os.getcwd()}'")
        return name, "; ".join(notes)

    def read(self, el, attr: str, file: str, kind: str) -> bytes:
        """Bytes of the file named by attribute ``attr`` (value ``file``) of ``el``."""
        return self.load(el, attr, file, kind).content

    def load(self, el, attr: str, file: str, kind: str, reuse=None):
        """The Loaded file named by attribute ``attr`` (value ``file``) of ``el``;
        ``reuse``: see ResourceReader.open (its content None: not read again)."""
        name, note = self.name(el, file, kind)
        try:
            res, tried = self.reader.open(name, reuse=reuse)
        except ModelError as exc:  # an ambiguous assets-dict name, a provider failing
            raise error_at(el, exc.detail, attr) from exc.__cause__
        if res is None:
            raise missing(file, tried, (el, attr), note)
        return res


class AssetCompiler:
    def __init__(self, spec, defaults, ctx):
        self.spec = spec
        self.defaults = defaults
        self.ctx = ctx
        self.files = AssetFiles(spec, ctx)
        self.mesh_els, self.hfield_els, self.tex_els, self.mat_els = [], [], [], []
        for section in spec.sections("asset"):
            for el in section.children:
                if el.tag == "skin":  # (compiler/skin.py)
                    continue
                {"mesh": self.mesh_els, "hfield": self.hfield_els, "texture": self.tex_els,
                 "material": self.mat_els}[el.tag].append(el)
        self.discard = ctx.discardvisual
        if self.discard:  # discardvisual drops every material and texture
            self.mat_els, self.tex_els = [], []
        self.mesh_names = [self._name(el, "mesh") for el in self.mesh_els]
        self.hfield_names = [self._name(el, "hfield") for el in self.hfield_els]
        self.tex_names = [self._name(el, "texture") for el in self.tex_els]
        self.mat_names = [el.attr("name") or "" for el in self.mat_els]
        self._meshes = {}
        self._mesh_hull = set()
        self._geometry = {}  # mesh id -> compile_mesh_geometry's mesh, finish_mesh to come
        self._hfields = {}
        for names, els, kind in ((self.mesh_names, self.mesh_els, "mesh"),
                                 (self.hfield_names, self.hfield_els, "hfield"),
                                 (self.tex_names, self.tex_els, "texture"),
                                 (self.mat_names, self.mat_els, "material")):
            seen = set()
            for n, el in zip(names, els):
                if n and n in seen:
                    raise error_at(el, f"repeated name '{n}' in {kind}", "name")
                seen.add(n)

    @staticmethod
    def _name(el, kind):
        name = el.attr("name")
        if name:
            return name
        if kind == "texture" and el.attr("file") is None:
            return ""
        f = el.attr("file")
        if f is None:
            if kind in ("mesh", "hfield"):
                raise error_at(el, f"{kind} without file needs a name", "name")
            return ""
        return _stem(f)

    # -- meshes ---------------------------------------------------------------------
    def mesh(self, mid: int, needhull: bool = False, geom: bool = False):
        """Mesh ``mid`` compiled, with the hull graph when ``needhull``. ``geom``: asked
        for a geom, which reads nothing the hull and the polygons change: a compile of
        the mesh with the other hull serves, and a new one stops before them
        (compile_mesh_geometry; finish_mesh when fill asks for the mesh)."""
        key = (mid, needhull)
        if key in self._meshes:
            return self._meshes[key]
        if geom:
            for have in (self._meshes.get((mid, not needhull)), self._geometry.get(mid)):
                if have is not None:
                    return have
        elif mid in self._geometry:
            part = self._geometry.pop(mid)
            try:
                cm = finish_mesh(part, needhull)
            except ModelError as exc:
                raise self._mesh_error(mid, exc) from None
            if cm is not None:  # (else a cached mesh with the other hull: compiled anew)
                self._meshes[key] = cm
                return cm
        el = self.mesh_els[mid]
        cls = _class_of(el, self.defaults)
        a = Attrs(el, self.defaults.get(cls, "mesh", el))
        data = digest = fname = None
        # the attribute checks come before the file is read, as in MuJoCo (whose
        # reader only names the file)
        builtin = a.keyword("builtin", {k: k for k in mesh_builtin.BUILTINS})
        params = a.floats("params") if builtin is not None else None
        if builtin is not None and params is None:
            raise a.error("required attribute missing", "params")
        if a.str("file"):  # MuJoCo: file="" is no file
            fname = a.str("file")
            if builtin is not None:
                raise a.error("builtin cannot be used with a mesh file", "builtin")
        inertia = a.keyword("inertia", {k: k for k in MESH_INERTIA}, "legacy")
        maxhull = a.int("maxhullvert", -1)
        scale = a.floats("scale", 3, (1, 1, 1))
        given = {"vertex": a.floats("vertex"), "face": a.ints("face"),
                 "normal": a.floats("normal")}
        if builtin is not None:  # (MuJoCo reads it after the rest: its errors come last)
            if given["vertex"] is not None:
                raise a.error("builtin mesh cannot be used with user vertex data", "builtin")
            try:
                made = mesh_builtin.make(builtin, [float(x) for x in params])
            except mesh_builtin.BuiltinError as exc:
                raise a.error(str(exc), "params") from None
            given["vertex"] = made[0].astype(np.float64)
            if made[1] is not None:
                given["face"] = made[1]
            if made[2] is not None:
                given["normal"] = made[2].astype(np.float64)
            if made[3] is not None:
                inertia = made[3]
        reorient = True
        if el.find("plugin") and fname is None and given["vertex"] is None:
            # LoadSDF: the plugin's surface (a mesh with data of its own keeps it)
            given, reorient = self._sdf_mesh(el, mid, scale), False
        inputs = dict(given, file_name=fname,
                      content_type=a.str("content_type") or _data_uri_type(fname),
                      texcoord=a.floats("texcoord"), scale=scale,
                      refpos=a.floats("refpos", 3, (0, 0, 0)),
                      refquat=a.floats("refquat", 4, (1, 0, 0, 0)), inertia=inertia,
                      maxhullvert=maxhull, smoothnormal=bool(a.bool("smoothnormal", 0)),
                      needhull=needhull, reorient=reorient)
        if fname is not None:
            # a provider that says the file has not changed since it was read lets the
            # mesh compiled from it then be taken without reading it again (MuJoCo's
            # asset cache)
            loaded = self.files.load(el, "file", fname, "mesh",
                                     reuse=lambda d: mesh_cached(file_digest=d, **inputs))
            data, digest = loaded.content, loaded.digest
        try:
            cm = (compile_mesh_geometry if geom else compile_mesh)(
                name=self.mesh_names[mid], file_bytes=data, file_digest=digest, **inputs)
        except ModelError as exc:
            raise self._mesh_error(mid, exc) from None
        cm.material = a.str("material")
        if geom:
            self._geometry[mid] = cm
        else:
            self._meshes[key] = cm
        return cm

    def _mesh_error(self, mid: int, exc: ModelError) -> ModelError:
        """A mesh compile's error, placed at the <mesh> element (file attribute by
        default) unless it has a place."""
        if exc.line is not None:
            return exc
        el = self.mesh_els[mid]
        return error_at(el, exc.detail, exc.attribute or ("file" if el.attr("file") else None))

    def _sdf_mesh(self, el, mid: int, scale) -> dict:
        """The vertices, faces and normals MuJoCo's LoadSDF makes for a mesh with an
        SDF <plugin> (tiphys/compiler/sdf_mesh.py), with its errors."""
        from .plugins import sdf_instance
        from .sdf_mesh import sdf_mesh
        name = self.mesh_names[mid]
        pel = el.find("plugin")[0]
        if not (pel.attr("plugin") or pel.attr("instance")):
            raise error_at(pel, f"neither 'plugin' nor 'instance' is specified for mesh "
                                f"'{name}', (id = {mid})")
        if scale is not None and any(float(x) != 1 for x in scale):
            raise error_at(el, f"attribute scale is not compatible with SDFs in mesh "
                               f"'{name}', (id = {mid})", "scale")
        cls, config = sdf_instance(self.spec, el, pel, "<mesh><plugin>")
        try:
            vertex, face, normal = sdf_mesh(cls, config)
        except ValueError as exc:
            raise error_at(pel, str(exc), "instance") from None
        return {"vertex": vertex, "face": face, "normal": normal}

    def hfield(self, hid: int):
        if hid in self._hfields:
            return self._hfields[hid]
        el = self.hfield_els[hid]
        a = Attrs(el)
        data = digest = fname = None
        ctype = None
        if a.str("file"):  # MuJoCo: file="" is no file
            fname = a.str("file")
            ctype = a.str("content_type") or _data_uri_type(fname)
            # (a provider's "not modified" lets the decoded file be reused unread)
            loaded = self.files.load(el, "file", fname, "hfield",
                                     reuse=lambda d: hfield_cached(d, fname, ctype))
            data, digest = loaded.content, loaded.digest
        size = a.floats("size", 4)
        if size is None:
            raise a.error("missing required attribute", "size")
        try:
            hf = compile_hfield(name=self.hfield_names[hid], file_bytes=data, file_name=fname,
                                content_type=ctype, nrow=a.int("nrow", 0),
                                ncol=a.int("ncol", 0), size=size,
                                elevation=a.floats("elevation"), file_digest=digest)
        except ModelError as exc:
            if exc.line is not None:
                raise
            raise error_at(el, exc.detail, exc.attribute) from None
        self._hfields[hid] = hf
        return hf

    def attach_geom(self, g, a: Attrs):
        """Resolve a geom's mesh/hfield: sizes, data id and the mesh frame offset."""
        if g.type == GEOM_HFIELD:
            if not g.hfield:
                raise a.error("hfield geom must have a valid hfield", "hfield")
            hid = self._lookup(self.hfield_names, g.hfield, a, "hfield")
            g.hfieldobj = self.hfield(hid)
            g.dataid = hid
            hs = g.hfieldobj.size
            g.size = np.array([hs[0], hs[1], 0.25 * hs[2] + 0.5 * hs[3]])
        elif g.hfield:
            raise a.error("hfield attribute requires type hfield", "hfield")
        if g.type in (GEOM_MESH, GEOM_SDF) and not g.mesh:
            raise a.error("mesh geom must have a valid mesh", "mesh")
        if not g.mesh:
            return
        if a.has_numbers("fromto"):
            raise a.error("fromto cannot be used with mesh geom", "fromto")
        mid = self._lookup(self.mesh_names, g.mesh, a, "mesh")
        collide = g.contype != 0 or g.conaffinity != 0
        # a colliding mesh geom needs the hull later (fill): compiled with it now, the
        # mesh is compiled once (the hull changes no field the geom reads)
        meshlike = g.type in (GEOM_MESH, GEOM_SDF)
        cm = self.mesh(mid, needhull=meshlike and collide and not g.shell, geom=True)
        center = np.zeros(3)
        if not meshlike:
            kind = {2: "sphere", 3: "capsule", 4: "ellipsoid", 5: "cylinder", 6: "box"}.get(
                g.type)
            if kind is None:
                raise a.error("mesh can only be fitted to sphere, capsule, ellipsoid, "
                              "cylinder or box", "type")
            g.size, center = cm.fit_size(kind, self.ctx.fitaabb, g.fitscale)
            # MuJoCo keeps the mesh id of a primitive fitted to a mesh: geom_dataid is
            # the mesh's, and discardvisual keeps the mesh (the geom still names it)
            g.dataid = mid
            g.fitmesh = True
            if not np.all(np.isfinite(g.size)):  # MuJoCo: "nan size in geom"
                raise a.error("nan size in geom (mesh inertia box is degenerate)", "mesh")
        else:
            if g.shell:
                raise a.error("for mesh geoms, inertia should be specified in the mesh asset",
                              "shellinertia")
            if collide:
                self._mesh_hull.add(mid)
            g.meshobj = cm
            g.dataid = mid
            g.size = cm.geom_size()
        g.mesh_material = cm.material
        meshpos = rot.rotate(cm.quat, center) + cm.pos
        g.pos, g.quat = rot.frame_accum(g.pos, g.quat, meshpos, cm.quat)

    def _lookup(self, names, name, a, attr):
        try:
            return names.index(name)
        except ValueError:
            raise a.error(f"unknown {attr} '{name}'", attr) from None

    def discard_unused_meshes(self, bodies, keep=()) -> None:
        """discardvisual: keep only meshes used by the remaining (collidable) geoms and
        those named in ``keep`` (meshes that sensors name)."""
        used = {g.dataid for b in bodies for g in b.geoms
                if g.meshobj is not None or g.fitmesh}
        used |= {i for i, name in enumerate(self.mesh_names) if name and name in keep}
        used = sorted(used)
        new_id = {old: new for new, old in enumerate(used)}
        for b in bodies:
            for g in b.geoms:
                if g.meshobj is not None or g.fitmesh:
                    g.dataid = new_id[g.dataid]
        self.mesh_els = [self.mesh_els[i] for i in used]
        self.mesh_names = [self.mesh_names[i] for i in used]
        self._meshes = {(new_id[mid], hull): cm for (mid, hull), cm in self._meshes.items()
                        if mid in new_id}
        self._mesh_hull = {new_id[mid] for mid in self._mesh_hull if mid in new_id}
        self._geometry = {new_id[mid]: cm for mid, cm in self._geometry.items()
                          if mid in new_id}

    def material_id(self, name, el):
        if self.discard:
            return -1
        try:
            return self.mat_names.index(name)
        except ValueError:
            raise error_at(el, f"unknown material '{name}'", "material") from None

    def texture_id(self, name, el):
        if self.discard:
            return -1
        try:
            return self.tex_names.index(name)
        except ValueError:
            raise error_at(el, f"unknown texture '{name}'", "texture") from None

    # -- arrays ---------------------------------------------------------------------
    def fill(self, out):
        meshes = []
        for mid in range(len(self.mesh_els)):
            meshes.append(self.mesh(mid, needhull=mid in self._mesh_hull))
        self.compiled_meshes = meshes  # (their face hierarchies: bvh.fill_bvh)
        if meshes:
            _fill_meshes(out, meshes)
        else:
            replay_empty(out, "meshes", lambda ns: _fill_meshes(ns, []))
        hfields = [self.hfield(i) for i in range(len(self.hfield_els))]
        if hfields:
            _fill_hfields(out, hfields)
        else:
            replay_empty(out, "hfields", lambda ns: _fill_hfields(ns, []))
        if self.tex_els:
            self._textures(out)
        else:
            replay_empty(out, "textures", self._textures)
        if self.mat_els:
            self._materials(out)
        else:
            replay_empty(out, "materials", self._materials)
        from .compile import _setsize
        _setsize(out, nmesh=len(meshes), nmeshvert=len(out.mesh_vert),
                 nmeshnormal=len(out.mesh_normal), nmeshtexcoord=len(out.mesh_texcoord),
                 nmeshface=len(out.mesh_face), nmeshgraph=len(out.mesh_graph),
                 nhfield=len(hfields), nhfielddata=len(out.hfield_data),
                 ntex=len(self.tex_els), ntexdata=len(out.tex_data), nmat=len(self.mat_els))

    def _textures(self, out):
        """tex_* arrays; tex_data (uint8) stays on the host (the renderer samples it)."""
        texs = []
        for el in self.tex_els:
            def read(name, attr, reuse=None, el=el):
                return self.files.load(el, attr, name, "texture", reuse)
            try:
                texs.append(compile_texture(Attrs(el), read))
            except ModelError as exc:
                if exc.line is not None:
                    raise
                raise error_at(el, exc.detail, exc.attribute or "file") from None
        for name in ("type", "colorspace", "height", "width", "nchannel"):
            setattr(out, "tex_" + name, np.array([getattr(t, name) for t in texs],
                                                 dtype=np.int32))
        sizes = [t.data.size for t in texs]
        out.tex_adr = np.array(np.cumsum([0] + sizes)[:-1], dtype=np.int32)
        out.tex_data = np.concatenate([t.data for t in texs]) if texs \
            else np.zeros(0, dtype=np.uint8)

    def _materials(self, out):
        n = len(self.mat_els)
        texid = np.full((n, 10), -1, dtype=np.int32)
        vals = {k: [] for k in ("texuniform", "texrepeat", "emission", "specular", "shininess",
                                "reflectance", "metallic", "roughness", "rgba")}
        for i, el in enumerate(self.mat_els):
            cls = _class_of(el, self.defaults)
            a = Attrs(el, self.defaults.get(cls, "material", el))
            if a.str("texture"):  # MuJoCo: texture="" is none
                texid[i, 1] = self.texture_id(a.str("texture"), el)
            for layer in el.find("layer"):
                la = Attrs(layer)
                role = la.keyword("role", TEXTURE_ROLES)
                if role is None or not la.has("texture"):
                    raise la.error("layer needs texture and role", "role")
                texid[i, role] = self.texture_id(la.str("texture"), layer)
            vals["texuniform"].append(a.keyword("texuniform", BOOL, 0))
            vals["texrepeat"].append(a.floats("texrepeat", 2, (1, 1)))
            vals["emission"].append(a.float("emission", 0.0))
            vals["specular"].append(a.float("specular", 0.5))
            vals["shininess"].append(a.float("shininess", 0.5))
            vals["reflectance"].append(a.float("reflectance", 0.0))
            vals["metallic"].append(a.float("metallic", -1.0))
            vals["roughness"].append(a.float("roughness", -1.0))
            vals["rgba"].append(a.floats("rgba", 4, (1, 1, 1, 1)))
        out.mat_texid = texid
        out.mat_texuniform = np.array(vals["texuniform"], dtype=np.int32)
        out.mat_texrepeat = np.array(vals["texrepeat"], dtype=np.float64).reshape(n, 2)
        for k in ("emission", "specular", "shininess", "reflectance", "metallic", "roughness"):
            setattr(out, "mat_" + k, np.array(vals[k], dtype=np.float64))
        out.mat_rgba = np.array(vals["rgba"], dtype=np.float64).reshape(n, 4)

    def names(self) -> dict:
        return {"mesh": self.mesh_names, "hfield": self.hfield_names,
                "texture": self.tex_names, "material": self.mat_names}

    def paths(self, skin_els=()) -> list:
        """(field, stored file or None per asset) for height fields, meshes, skins
        (``skin_els``: the compiled skins' elements) and textures, in the model's order
        (names.fill_paths)."""
        def files(els, kind, attr="file"):
            out = []
            for el in els:
                file = el.attr(attr)
                kept = getattr(el, "xml_stored_file", None)  # an attached child's asset
                out.append(None if not file else kept if kept is not None else
                           self.files.stored(el, file, kind))
            return out
        skins = [el if el.tag == "skin" and el.get_attr("file") else None
                 for el in skin_els]
        return [("hfield_pathadr", files(self.hfield_els, "hfield")),
                ("mesh_pathadr", files(self.mesh_els, "mesh")),
                ("skin_pathadr", [None if el is None else files([el], "skin")[0]
                                  for el in skins]),
                ("tex_pathadr", files(self.tex_els, "texture"))]


def _adr(counts):
    return np.cumsum([0] + counts)[:-1].astype(np.int32)


def _fill_meshes(out, meshes):
    f = np.float64
    out.mesh_vertnum = np.array([m.nvert for m in meshes], dtype=np.int32)
    out.mesh_vertadr = _adr([m.nvert for m in meshes])
    out.mesh_facenum = np.array([m.nface for m in meshes], dtype=np.int32)
    out.mesh_faceadr = _adr([m.nface for m in meshes])
    out.mesh_normalnum = np.array([m.nnormal for m in meshes], dtype=np.int32)
    out.mesh_normaladr = _adr([m.nnormal for m in meshes])
    out.mesh_texcoordnum = np.array([m.ntexcoord for m in meshes], dtype=np.int32)
    tadr = _adr([m.ntexcoord for m in meshes])
    out.mesh_texcoordadr = np.array([tadr[i] if m.has_texcoord else -1
                                     for i, m in enumerate(meshes)], dtype=np.int32)
    gadr = _adr([m.szgraph for m in meshes])
    out.mesh_graphadr = np.array([gadr[i] if m.szgraph else -1
                                  for i, m in enumerate(meshes)], dtype=np.int32)

    def cat(name, width, dtype):
        parts = [np.asarray(getattr(m, name), dtype=dtype).reshape(-1, width)
                 for m in meshes]
        return np.concatenate(parts) if parts else np.zeros((0, width), dtype=dtype)

    out.mesh_vert = cat("vert", 3, f)
    out.mesh_normal = cat("normal", 3, f)
    out.mesh_texcoord = cat("texcoord", 2, f)
    out.mesh_face = cat("face", 3, np.int32)
    out.mesh_facenormal = cat("facenormal", 3, np.int32)
    out.mesh_facetexcoord = cat("facetexcoord", 3, np.int32)
    out.mesh_graph = cat("graph", 1, np.int32).reshape(-1)
    out.mesh_scale = np.array([m.scale for m in meshes], dtype=f).reshape(-1, 3)
    out.mesh_pos = np.array([m.pos for m in meshes], dtype=f).reshape(-1, 3)
    out.mesh_quat = np.array([m.quat for m in meshes], dtype=f).reshape(-1, 4)
    poly = polygon_arrays(meshes)
    for name in ("nmeshpoly", "nmeshpolyvert", "nmeshpolymap"):
        setattr(out, "_size_" + name, poly.pop(name))
    for name, value in poly.items():
        setattr(out, name, value)


def _fill_hfields(out, hfields):
    out.hfield_size = np.array([h.size for h in hfields], dtype=np.float64).reshape(-1, 4)
    out.hfield_nrow = np.array([h.nrow for h in hfields], dtype=np.int32)
    out.hfield_ncol = np.array([h.ncol for h in hfields], dtype=np.int32)
    out.hfield_adr = _adr([h.nrow * h.ncol for h in hfields])
    out.hfield_data = np.concatenate([h.data for h in hfields]).astype(np.float64) if hfields \
        else np.zeros(0)
