"""Rendering kernels: GGUI vertex buffers written from the engine's device arrays.

``geom_vertices`` moves every object vertex (geoms and sites, tessellated once per
model by ``tiphys.viewer.geometry``) into the world from ``geom_xpos/geom_xmat``
(``site_xpos/site_xmat``) of the world each tile shows, and lights it there:
MuJoCo's OpenGL model per vertex (headlight plus model lights; ambient, diffuse,
Blinn-Phong specular with the material's specular/shininess, emission; spot cutoff
and exponent, attenuation; linear fog), so GGUI only has to interpolate colours.
``flex_vertices`` and ``skin_vertices`` move the flexes' and skins' vertices
(tiphys.viewer.geometry's FlexTemplate, SkinTemplate) from flexvert_xpos and the
bones' body poses; ``flex_subvertices`` places the vertices of textured flex faces'
sub-triangles between their faces' corners. ``overlay_lines`` and ``overlay_markers`` write the optional decorations (body
frames, joint axes, tendons, contact forces; contact points and centres of mass),
``perturb`` writes the mouse perturbation into ``xfrc_applied``.

A vertex buffer row is GGUI's layout: position (3), normal (3), texcoord (2),
rgba (4), float32. Hidden objects collapse to the origin (zero-area triangles,
zero-length lines), so a buffer's layout never changes with what is shown.
"""
import taichi as ti

from .bind import launch
from .consts import CONE_PYRAMIDAL, JNT_SLIDE, LIGHT_DIRECTIONAL, LIGHT_SPOT, MINVAL
from .math import normalize3, param_row, quat2mat, quat_mul
from .rne_post import contact_force_local

ND = ti.types.ndarray()

# object flags and kinds (tiphys.viewer.geometry's object tables)
FLAG_VISIBLE, FLAG_PLANE, FLAG_STATIC = 1, 2, 4
KIND_GEOM, KIND_SITE, KIND_FLEX, KIND_SKIN = 0, 1, 2, 3
# how a flex object's vertex moves (tiphys.viewer.geometry.FlexTemplate): (mode, v, a, b)
# flex vertex ids and three numbers x, y, z per vertex
# FLEX_SKIN: at flex vertex v offset by x along its smoothed normal N(v), normal y N(v)
#   (a < 0) or y times the unit normal of the face (v, a, b) (flat skin)
# FLEX_SIDE: at v offset by x along N(v), normal y * unit((X(b) - X(a)) x N(b)) (the
#   side strip closing a 2D skin, MuJoCo's makeSide)
# FLEX_EDGE: on the cylinder of the edge (a, b): X(a) + x (X(b) - X(a)) + y u + z w,
#   with u, w unit and perpendicular to the edge, normal unit(y u + z w)
# FLEX_VERT: on the sphere around v: X(v) + (x, y, z), normal unit(x, y, z)
# FLEX_FACE: at v offset by x along the unit normal n of the face (v, a, b), normal n
#   (MuJoCo's element faces, mjVIS_FLEXFACE)
FLEX_SKIN, FLEX_SIDE, FLEX_EDGE, FLEX_VERT, FLEX_FACE = 0, 1, 2, 3, 4
# params layout (float32 vector set by the host each frame)
P_CAM, P_HEAD_AMB, P_HEAD_DIF, P_HEAD_SPEC, P_HEAD_ON, P_HEAD_DIR = 0, 3, 6, 9, 12, 13
P_FOG_ON, P_FOG_START, P_FOG_END, P_FOG_RGB, P_GLOBAL_AMB, P_ORTHO = 16, 17, 18, 19, 22, 23
NPARAM = 24
# light table layout (one row per model light)
L_TYPE, L_ACTIVE, L_AMB, L_DIF, L_SPEC, L_ATT, L_CUTOFF, L_EXP = 0, 1, 2, 5, 8, 11, 14, 15
LIGHT_COLUMNS = 16


@ti.func
def _vec3(a: ti.template(), i, k):
    return ti.Vector([ti.cast(a[i, k + j], float) for j in ti.static(range(3))])


@ti.func
def _param3(params: ti.template(), k):
    return ti.Vector([ti.cast(params[k + j], float) for j in ti.static(range(3))])


@ti.func
def _write_row(vbo: ti.template(), row, p, n, c):
    for k in ti.static(range(3)):
        vbo[row, k] = ti.cast(p[k], ti.f32)
        vbo[row, 3 + k] = ti.cast(n[k], ti.f32)
    vbo[row, 6] = ti.f32(0.0)
    vbo[row, 7] = ti.f32(0.0)
    for k in ti.static(range(4)):
        vbo[row, 8 + k] = ti.cast(c[k], ti.f32)


@ti.func
def _hide_row(vbo: ti.template(), row):
    """A vertex of a hidden object: at the origin, transparent."""
    zero = ti.Vector([0.0, 0.0, 0.0])
    _write_row(vbo, row, zero, zero, ti.Vector([0.0, 0.0, 0.0, 0.0]))


@ti.func
def _tile_vertex(vertid, tile, vert_obj: ti.template(), obj_int: ti.template(),
                 tile_world: ti.template(), vert_row: ti.template()):
    """(object, its flags, the tile's world, the vbo row) of template vertex
    ``vertid`` in ``tile``."""
    objid = vert_obj[vertid]
    return (objid, obj_int[objid, 2], tile_world[tile],
            vert_row[vertid, 0] + tile * vert_row[vertid, 1])


@ti.func
def _colour_row(vbo: ti.template(), row, p, n, vertid, objid, tile, worldid, offset,
                segment, nobj, vert_rgba: ti.template(), obj_float: ti.template(),
                params: ti.template(), light_xpos: ti.template(), light_xdir: ti.template(),
                light_table: ti.template(), nlight):
    """A moving (flex or skin) vertex at world point p with normal n: its segmentation
    code, or its colour lit like the geoms'; written to row ``row``."""
    col = ti.Vector([0.0, 0.0, 0.0, 0.0])
    if segment != 0:
        col = segment_colour(tile * nobj + objid)
    else:
        rgba = ti.Vector([vert_rgba[vertid, j] for j in ti.static(range(4))])
        material = ti.Vector([obj_float[objid, j] for j in ti.static(range(3))])
        col = shade(p, n, rgba, material, params, worldid, offset, light_xpos, light_xdir,
                    light_table, nlight)
    _write_row(vbo, row, p, n, col)


@ti.func
def _light(p, n, view, rgb, specular, shininess, ldir_to, att, amb, dif, spec):
    """One light's contribution (OpenGL fixed function, local viewer)."""
    ndl = n.dot(ldir_to)
    out = ti.Vector([ti.cast(amb[k] * rgb[k], float) for k in ti.static(range(3))])
    if ndl > 0.0:
        out += dif * rgb * ndl
        h = ldir_to + view
        hn = h.norm()
        if hn > 1e-12:
            ndh = ti.max(n.dot(h / hn), 0.0)
            out += spec * specular * ti.pow(ndh, shininess * 128.0)
    return att * out


@ti.func
def shade(p, n, rgba, material, params: ti.template(), worldid, offset,
          light_xpos: ti.template(), light_xdir: ti.template(), light_table: ti.template(),
          nlight):
    """Lit colour of a surface point p (world frame) with unit normal n."""
    cam = _param3(params, P_CAM)
    view = (cam - p).normalized()
    rgb = ti.Vector([ti.cast(rgba[k], float) for k in ti.static(range(3))])
    specular = ti.cast(material[1], float)
    shininess = ti.cast(material[2], float)
    col = material[0] * rgb + params[P_GLOBAL_AMB] * rgb
    if params[P_HEAD_ON] > 0.5:
        col += _light(p, n, view, rgb, specular, shininess, -_param3(params, P_HEAD_DIR), 1.0,
                      _param3(params, P_HEAD_AMB), _param3(params, P_HEAD_DIF),
                      _param3(params, P_HEAD_SPEC))
    for lightid in range(nlight):
        if light_table[lightid, L_ACTIVE] > 0.5:
            ltype = ti.cast(light_table[lightid, L_TYPE], ti.i32)
            ldir = ti.Vector([light_xdir[worldid, lightid][k] for k in ti.static(range(3))])
            to = -ldir
            att = 1.0
            if ltype != LIGHT_DIRECTIONAL:
                lpos = ti.Vector([light_xpos[worldid, lightid][k] for k in ti.static(range(3))]) + offset
                vec = lpos - p
                dist = vec.norm()
                to = vec / ti.max(dist, 1e-12)
                a0 = light_table[lightid, L_ATT]
                a1 = light_table[lightid, L_ATT + 1]
                a2 = light_table[lightid, L_ATT + 2]
                att = 1.0 / ti.max(a0 + a1 * dist + a2 * dist * dist, 1e-12)
                if ltype == LIGHT_SPOT:
                    cosang = -to.dot(ldir.normalized())
                    cutoff = light_table[lightid, L_CUTOFF]
                    if cutoff < 180.0:
                        if cosang < ti.cos(cutoff * 3.14159265358979 / 180.0):
                            att = 0.0
                        else:
                            att *= ti.pow(ti.max(cosang, 0.0), light_table[lightid, L_EXP])
            if att > 0.0:
                col += _light(p, n, view, rgb, specular, shininess, to, att,
                              _vec3(light_table, lightid, L_AMB),
                              _vec3(light_table, lightid, L_DIF),
                              _vec3(light_table, lightid, L_SPEC))
    col = ti.min(ti.max(col, 0.0), 1.0)
    if params[P_FOG_ON] > 0.5:
        dist = (cam - p).norm()
        start, end = params[P_FOG_START], params[P_FOG_END]
        f = ti.min(ti.max((end - dist) / ti.max(end - start, 1e-12), 0.0), 1.0)
        col = f * col + (1.0 - f) * _param3(params, P_FOG_RGB)
    return ti.Vector([col[0], col[1], col[2], rgba[3]])


@ti.func
def segment_colour(objid):
    """(tile * nobj + object id) + 1 as an exact 8-bit RGB code (0: background)."""
    code = objid + 1
    return ti.Vector([ti.cast(code & 255, float) / 255.0,
                      ti.cast((code >> 8) & 255, float) / 255.0,
                      ti.cast((code >> 16) & 255, float) / 255.0, 1.0])


@ti.kernel
def _geom_vertices(vert_obj: ND, vert_pos: ND, vert_nrm: ND, vert_rgba: ND, vert_row: ND,
                   obj_int: ND, obj_float: ND, tile_world: ND, tile_offset: ND,
                   geom_xpos: ND, geom_xmat: ND, site_xpos: ND, site_xmat: ND,
                   light_xpos: ND, light_xdir: ND, light_table: ND, params: ND,
                   nvert: ti.i32, nobj: ti.i32, ntile: ti.i32, nlight: ti.i32, segment: ti.i32,
                   vbo: ND):
    for tile, vertid in ti.ndrange(ntile, nvert):
        objid = vert_obj[vertid]
        kind = obj_int[objid, 0]
        if kind == KIND_FLEX or kind == KIND_SKIN:
            continue  # written by _flex_vertices, _skin_vertices
        elemid = obj_int[objid, 1]
        flags = obj_int[objid, 2]
        worldid = tile_world[tile]
        row = vert_row[vertid, 0] + tile * vert_row[vertid, 1]
        offset = ti.Vector([ti.cast(tile_offset[tile, k], float) for k in ti.static(range(3))])
        static_plane = (flags & FLAG_PLANE) != 0 and (flags & FLAG_STATIC) != 0
        if static_plane:
            # a static plane is drawn once, untranslated, lit by the first tile's world
            offset = ti.Vector([0.0, 0.0, 0.0])
            worldid = tile_world[0]
        visible = (flags & FLAG_VISIBLE) != 0
        if static_plane and tile > 0:
            visible = False
        if not visible:
            _hide_row(vbo, row)
        else:
            pos = ti.Vector([0.0, 0.0, 0.0])
            mat = ti.Matrix.identity(float, 3)
            if kind == KIND_GEOM:
                for i in ti.static(range(3)):
                    pos[i] = geom_xpos[worldid, elemid][i]
                    for j in ti.static(range(3)):
                        mat[i, j] = geom_xmat[worldid, elemid][i, j]
            else:
                for i in ti.static(range(3)):
                    pos[i] = site_xpos[worldid, elemid][i]
                    for j in ti.static(range(3)):
                        mat[i, j] = site_xmat[worldid, elemid][i, j]
            local = _vec3(vert_pos, vertid, 0)
            p = mat @ local + pos + offset
            n = mat @ _vec3(vert_nrm, vertid, 0)
            rgba = ti.Vector([vert_rgba[vertid, k] for k in ti.static(range(4))])
            col = ti.Vector([0.0, 0.0, 0.0, 0.0])
            if segment != 0:
                col = segment_colour(tile * nobj + objid)
            else:
                material = ti.Vector([obj_float[objid, k] for k in ti.static(range(3))])
                col = shade(p, n, rgba, material, params, worldid, offset, light_xpos,
                            light_xdir, light_table, nlight)
                if (flags & FLAG_PLANE) != 0:
                    # MuJoCo draws a plane seen from behind more transparent
                    if (_param3(params, P_CAM) - p).dot(n) < 0.0:
                        col[3] *= 0.3
            _write_row(vbo, row, p, n, col)


def geom_vertices(t, d, params, segment: bool, vbo) -> None:
    """World-space vertices of every object of every tile.

    ``t`` is a viewer.renderer.DeviceScene (template arrays on the device, tiles,
    lights). Reads geom_xpos, geom_xmat, site_xpos, site_xmat, light_xpos,
    light_xdir; writes the vertex buffer ``vbo`` (rows: see the module docstring).
    """
    _geom_vertices(t.vert_obj, t.vert_pos, t.vert_nrm, t.vert_rgba, t.vert_row,
                   t.obj_int, t.obj_float, t.tile_world, t.tile_offset,
                   d.geom_xpos, d.geom_xmat, d.site_xpos, d.site_xmat,
                   d.light_xpos, d.light_xdir, t.light_table, params,
                   t.nvert, t.nobj, t.ntile, t.nlight, int(segment), vbo)


@ti.func
def _flex_normal(flexvert_xpos: ti.template(), worldid, v, norm_adr: ti.template(),
                 norm_num: ti.template(), norm_pair: ti.template()):
    """Flex vertex v's smoothed normal: the unit sum of the unit normals of the faces
    around it (MuJoCo's addNormal, then mju_normalize3)."""
    p = _v3(flexvert_xpos, worldid, v)
    n = ti.Vector([0.0, 0.0, 0.0])
    for k in range(norm_num[v]):
        pa = _v3(flexvert_xpos, worldid, norm_pair[norm_adr[v] + k, 0])
        pb = _v3(flexvert_xpos, worldid, norm_pair[norm_adr[v] + k, 1])
        n += normalize3((pa - p).cross(pb - p))
    return normalize3(n)


@ti.kernel
def _flex_vertices(fv_vert: ND, fv_int: ND, fv_float: ND, norm_adr: ND, norm_num: ND,
                   norm_pair: ND, vert_obj: ND, vert_rgba: ND, vert_row: ND, obj_int: ND,
                   obj_float: ND, tile_world: ND, tile_offset: ND, flexvert_xpos: ND,
                   light_xpos: ND, light_xdir: ND, light_table: ND, params: ND,
                   nflexrow: ti.i32, nobj: ti.i32, ntile: ti.i32, nlight: ti.i32,
                   segment: ti.i32, vbo: ND):
    """The flex objects' vertices of every tile, from flexvert_xpos (see FLEX_SKIN,
    FLEX_SIDE, FLEX_EDGE), lit like the geoms' (geom_vertices)."""
    for tile, k in ti.ndrange(ntile, nflexrow):
        vertid = fv_vert[k]
        objid, flags, worldid, row = _tile_vertex(vertid, tile, vert_obj, obj_int,
                                                  tile_world, vert_row)
        if (flags & FLAG_VISIBLE) == 0:
            _hide_row(vbo, row)
        else:
            offset = ti.Vector([ti.cast(tile_offset[tile, j], float) for j in ti.static(range(3))])
            mode = fv_int[k, 0]
            v = fv_int[k, 1]
            va = fv_int[k, 2]
            vb = fv_int[k, 3]
            x = ti.cast(fv_float[k, 0], float)
            y = ti.cast(fv_float[k, 1], float)
            z = ti.cast(fv_float[k, 2], float)
            p = ti.Vector([0.0, 0.0, 0.0])
            n = ti.Vector([0.0, 0.0, 1.0])
            hidden = 0
            if mode == FLEX_VERT:
                radial = ti.Vector([x, y, z])
                p = _v3(flexvert_xpos, worldid, v) + radial
                n = normalize3(radial)
            elif mode == FLEX_FACE:
                pv = _v3(flexvert_xpos, worldid, v)
                n = normalize3((_v3(flexvert_xpos, worldid, va) - pv).cross(
                    _v3(flexvert_xpos, worldid, vb) - pv))
                p = pv + x * n
                # MuJoCo's OpenGL culls the faces seen from behind (mjRND_CULL_FACE):
                # the corners of such a face collapse (every corner of a flat face
                # sees the same side of its plane)
                view = _param3(params, P_CAM) - (p + offset)
                if params[P_ORTHO] > 0.5:
                    view = -_param3(params, P_HEAD_DIR)
                if view.dot(n) <= 0.0:
                    hidden = 1
            elif mode == FLEX_EDGE:
                pa = _v3(flexvert_xpos, worldid, va)
                axis = _v3(flexvert_xpos, worldid, vb) - pa
                e = normalize3(axis)
                # a fixed helper axis least aligned with the edge
                helper = ti.Vector([1.0, 0.0, 0.0])
                if ti.abs(e[0]) > 0.6:
                    helper = ti.Vector([0.0, 1.0, 0.0])
                u = normalize3(e.cross(helper))
                w = e.cross(u)
                radial = y * u + z * w
                p = pa + x * axis + radial
                n = normalize3(radial)
            else:
                nv = _flex_normal(flexvert_xpos, worldid, v, norm_adr, norm_num, norm_pair)
                p = _v3(flexvert_xpos, worldid, v) + x * nv
                if mode == FLEX_SKIN:
                    n = y * nv
                    if va >= 0:
                        pv = _v3(flexvert_xpos, worldid, v)
                        n = y * normalize3((_v3(flexvert_xpos, worldid, va) - pv).cross(
                            _v3(flexvert_xpos, worldid, vb) - pv))
                else:
                    nb = _flex_normal(flexvert_xpos, worldid, vb, norm_adr, norm_num,
                                      norm_pair)
                    n = y * normalize3((_v3(flexvert_xpos, worldid, vb) -
                                   _v3(flexvert_xpos, worldid, va)).cross(nb))
            if hidden != 0:
                _hide_row(vbo, row)
            else:
                _colour_row(vbo, row, p + offset, n, vertid, objid, tile, worldid, offset,
                            segment, nobj, vert_rgba, obj_float, params, light_xpos,
                            light_xdir, light_table, nlight)


def flex_vertices(t, d, params, segment: bool, vbo) -> None:
    """World-space vertices of the flex objects of every tile (``t``: a
    viewer.renderer.DeviceScene with flex rows). Reads flexvert_xpos, light_xpos,
    light_xdir; writes their rows of the vertex buffer ``vbo``."""
    _flex_vertices(t.fv_vert, t.fv_int, t.fv_float, t.norm_adr, t.norm_num, t.norm_pair,
                   t.vert_obj, t.vert_rgba, t.vert_row, t.obj_int, t.obj_float,
                   t.tile_world, t.tile_offset, d.flexvert_xpos, d.light_xpos,
                   d.light_xdir, t.light_table, params, t.nflexrow, t.nobj, t.ntile,
                   t.nlight, int(segment), vbo)


@ti.func
def _row_vec3(vbo: ti.template(), row, k):
    return ti.Vector([ti.cast(vbo[row, k + j], float) for j in ti.static(range(3))])


@ti.kernel
def _flex_subvertices(sub_vert: ND, sub_corner: ND, sub_weight: ND, vert_obj: ND,
                      vert_rgba: ND, vert_row: ND, obj_int: ND, obj_float: ND,
                      tile_world: ND, tile_offset: ND, light_xpos: ND, light_xdir: ND,
                      light_table: ND, params: ND, nsub: ti.i32, nobj: ti.i32,
                      ntile: ti.i32, nlight: ti.i32, segment: ti.i32, vbo: ND):
    """The textured flex sub-triangles' vertices of every tile: their face's corner
    rows (written by _flex_vertices) mixed with the sub-vertex's weights, the normal
    renormalized, lit with the sub-triangle's own (texture) colour."""
    for tile, s in ti.ndrange(ntile, nsub):
        vertid = sub_vert[s]
        objid, flags, worldid, row = _tile_vertex(vertid, tile, vert_obj, obj_int,
                                                  tile_world, vert_row)
        if (flags & FLAG_VISIBLE) == 0:
            _hide_row(vbo, row)
        else:
            w1 = ti.cast(sub_weight[s, 0], float)
            w2 = ti.cast(sub_weight[s, 1], float)
            weight = ti.Vector([1.0 - w1 - w2, w1, w2])
            p = ti.Vector([0.0, 0.0, 0.0])
            n = ti.Vector([0.0, 0.0, 0.0])
            for c in ti.static(range(3)):
                corner = sub_corner[s, c]
                crow = vert_row[corner, 0] + tile * vert_row[corner, 1]
                p += weight[c] * _row_vec3(vbo, crow, 0)
                n += weight[c] * _row_vec3(vbo, crow, 3)
            offset = ti.Vector([ti.cast(tile_offset[tile, j], float) for j in ti.static(range(3))])
            _colour_row(vbo, row, p, normalize3(n), vertid, objid, tile, worldid, offset,
                        segment, nobj, vert_rgba, obj_float, params, light_xpos, light_xdir,
                        light_table, nlight)


def flex_subvertices(t, d, params, segment: bool, vbo) -> None:
    """World-space vertices of the textured flex sub-triangles of every tile (``t``: a
    viewer.renderer.DeviceScene with sub-vertices), from the corner rows that
    ``flex_vertices`` wrote into ``vbo`` (run it first). Reads light_xpos, light_xdir;
    writes their rows of ``vbo``."""
    _flex_subvertices(t.sub_vert, t.sub_corner, t.sub_weight, t.vert_obj, t.vert_rgba,
                      t.vert_row, t.obj_int, t.obj_float, t.tile_world, t.tile_offset,
                      d.light_xpos, d.light_xdir, t.light_table, params, t.nflexsub,
                      t.nobj, t.ntile, t.nlight, int(segment), vbo)


@ti.kernel
def _skin_positions(sv_adr: ND, sv_num: ND, sv_entry: ND, sv_bone: ND, skin_vert: ND,
                    skin_bonebodyid: ND, skin_bonebindpos: ND, skin_bonebindquat: ND,
                    skin_bonevertweight: ND, tile_world: ND, xpos: ND, xquat: ND,
                    nskinvert: ti.i32, ntile: ti.i32, skin_xpos: ND):
    """Each skin vertex of each tile's world: the weighted sum over its bones of the
    bind-pose vertex moved with the bone's body (mjv_updateActiveSkin)."""
    for tile, v in ti.ndrange(ntile, nskinvert):
        worldid = tile_world[tile]
        local = ti.Vector([ti.cast(skin_vert[v][k], float) for k in ti.static(range(3))])
        p = ti.Vector([0.0, 0.0, 0.0])
        for e in range(sv_num[v]):
            k = sv_entry[sv_adr[v] + e]
            bone = sv_bone[sv_adr[v] + e]
            bodyid = skin_bonebodyid[bone]
            bq = ti.Vector([ti.cast(skin_bonebindquat[bone][i], float)
                            for i in ti.static(range(4))])
            bp = ti.Vector([ti.cast(skin_bonebindpos[bone][i], float)
                            for i in ti.static(range(3))])
            xq = ti.Vector([ti.cast(xquat[worldid, bodyid][i], float)
                            for i in ti.static(range(4))])
            rot = quat2mat(quat_mul(xq, ti.Vector([bq[0], -bq[1], -bq[2], -bq[3]])))
            translate = _v3(xpos, worldid, bodyid) - rot @ bp
            p += ti.cast(skin_bonevertweight[k], float) * (rot @ local + translate)
        for i in ti.static(range(3)):
            skin_xpos[tile, v, i] = ti.cast(p[i], ti.f32)


@ti.func
def _skin_point(skin_xpos: ti.template(), tile, v):
    return ti.Vector([ti.cast(skin_xpos[tile, v, k], float) for k in ti.static(range(3))])


@ti.kernel
def _skin_vertices(sv_vert: ND, sv_skin: ND, face_adr: ND, face_num: ND, face_of: ND,
                   face: ND, skin_xpos: ND, skin_inflate: ND, vert_obj: ND, vert_rgba: ND,
                   vert_row: ND, obj_int: ND, obj_float: ND, tile_world: ND, tile_offset: ND,
                   light_xpos: ND, light_xdir: ND, light_table: ND, params: ND,
                   nskinvert: ti.i32, nobj: ti.i32, ntile: ti.i32, nlight: ti.i32,
                   segment: ti.i32, vbo: ND):
    """The skin objects' vertices of every tile from ``skin_xpos`` (_skin_positions):
    the normal of a vertex is the unit sum of the (area-weighted) normals of the faces
    around it, and the vertex moves by the skin's inflate along it; lit like the
    geoms (geom_vertices)."""
    for tile, v in ti.ndrange(ntile, nskinvert):
        vertid = sv_vert[v]
        objid, flags, worldid, row = _tile_vertex(vertid, tile, vert_obj, obj_int,
                                                  tile_world, vert_row)
        if (flags & FLAG_VISIBLE) == 0:
            _hide_row(vbo, row)
        else:
            n = ti.Vector([0.0, 0.0, 0.0])
            for i in range(face_num[v]):
                f = face_of[face_adr[v] + i]
                p0 = _skin_point(skin_xpos, tile, face[f, 0])
                n += (_skin_point(skin_xpos, tile, face[f, 1]) - p0).cross(
                    _skin_point(skin_xpos, tile, face[f, 2]) - p0)
            n = n / ti.max(MINVAL, n.norm())
            offset = ti.Vector([ti.cast(tile_offset[tile, j], float)
                                for j in ti.static(range(3))])
            p = _skin_point(skin_xpos, tile, v) + ti.cast(skin_inflate[sv_skin[v]], float) * n
            _colour_row(vbo, row, p + offset, n, vertid, objid, tile, worldid, offset, segment,
                        nobj, vert_rgba, obj_float, params, light_xpos, light_xdir,
                        light_table, nlight)


def skin_vertices(m, t, d, params, segment: bool, vbo) -> None:
    """World-space vertices of the skin objects of every tile (``t``: a
    viewer.renderer.DeviceScene with skins), as MuJoCo's mjv_updateActiveSkin places
    them. Reads xpos, xquat, light_xpos, light_xdir; writes their rows of the vertex
    buffer ``vbo`` (and the DeviceScene's skin_xpos scratch)."""
    _skin_positions(t.sv_adr, t.sv_num, t.sv_entry, t.sv_bone, m.skin_vert,
                    m.skin_bonebodyid, m.skin_bonebindpos, m.skin_bonebindquat,
                    m.skin_bonevertweight, t.tile_world, d.xpos, d.xquat, t.nskinvert,
                    t.ntile, t.skin_xpos)
    _skin_vertices(t.sv_vert, t.sv_skin, t.sv_face_adr, t.sv_face_num, t.sv_face_of,
                   t.sv_face, t.skin_xpos, m.skin_inflate, t.vert_obj, t.vert_rgba,
                   t.vert_row, t.obj_int, t.obj_float, t.tile_world, t.tile_offset,
                   d.light_xpos, d.light_xdir, t.light_table, params, t.nskinvert, t.nobj,
                   t.ntile, t.nlight, int(segment), vbo)


# --------------------------------------------------------------------------- overlays

# overlay kinds (bit in the ``show`` mask) and their line/marker colours
SHOW_FRAMES, SHOW_JOINTS, SHOW_TENDONS, SHOW_FORCES, SHOW_CONTACTS, SHOW_COM = (
    1, 2, 4, 8, 16, 32)


@ti.func
def _line(vbo: ti.template(), row, a, b, c):
    n = ti.Vector([0.0, 0.0, 1.0])
    _write_row(vbo, row, a, n, c)
    _write_row(vbo, row + 1, b, n, c)


@ti.func
def _v3(a: ti.template(), worldid, i):
    return ti.Vector([a[worldid, i][k] for k in ti.static(range(3))])


@ti.func
def _wrap_obj(wrap_obj: ti.template(), worldid, pointid):
    """Object of path point ``pointid`` (MuJoCo's flat wrap_obj, 2 per wrap row)."""
    row = wrap_obj[worldid, pointid // 2]
    out = row[0]
    if pointid % 2 == 1:
        out = row[1]
    return out


@ti.func
def _wrap_point(wrap_xpos: ti.template(), worldid, pointid):
    """Path point ``pointid`` (MuJoCo's flat wrap_xpos, 2 points per 6-vector row)."""
    row = wrap_xpos[worldid, pointid // 2]
    out = ti.Vector([row[k] for k in ti.static(range(3))])
    if pointid % 2 == 1:
        out = ti.Vector([row[3 + k] for k in ti.static(range(3))])
    return out


@ti.kernel
def _overlay_lines(show: ti.i32, scales: ND, tile_world: ND, tile_offset: ND,
                   jnt_type: ND, body_parentid: ND, xpos: ND, xmat: ND, xanchor: ND,
                   xaxis: ND, ten_wrapadr: ND, ten_wrapnum: ND, wrap_obj: ND, wrap_xpos: ND,
                   ncon: ND, contact_pos: ND, contact_frame: ND, contact_dim: ND,
                   contact_friction: ND, contact_efc_address: ND, efc_force: ND,
                   pyramidal: ti.template(), nbody: ti.i32, njnt: ti.i32, ntendon: ti.i32,
                   npoint: ti.i32, nconmax: ti.i32, ntile: ti.i32, per_tile: ti.i32,
                   vbo: ND):
    """Lines per tile: 3 per body (frame), 1 per joint (axis), npoint - 1 path segments
    (tendons), 3 per contact (force arrow: shaft and two head strokes)."""
    for tile, item in ti.ndrange(ntile, per_tile):
        worldid = tile_world[tile]
        off = ti.Vector([ti.cast(tile_offset[tile, k], float) for k in ti.static(range(3))])
        row = 2 * (tile * per_tile + item)
        zero = ti.Vector([0.0, 0.0, 0.0])
        a, b = zero, zero
        c = ti.Vector([0.0, 0.0, 0.0, 1.0])
        if item < 3 * nbody:
            bodyid, axis = item // 3, item % 3
            if (show & SHOW_FRAMES) != 0 and bodyid > 0:
                a = _v3(xpos, worldid, bodyid) + off
                for ax in ti.static(range(3)):
                    if ax == axis:
                        dirn = ti.Vector([xmat[worldid, bodyid][k, ax]
                                          for k in ti.static(range(3))])
                        b = a + scales[0] * dirn
                        c[ax] = 0.9
        elif item < 3 * nbody + njnt:
            jntid = item - 3 * nbody
            jtype = jnt_type[jntid]
            if (show & SHOW_JOINTS) != 0 and jtype >= JNT_SLIDE:  # slide and hinge
                a = _v3(xanchor, worldid, jntid) + off
                b = a + scales[1] * _v3(xaxis, worldid, jntid)
                c = ti.Vector([0.2, 0.6, 0.8, 1.0])
        elif item < 3 * nbody + njnt + npoint:
            pointid = item - 3 * nbody - njnt
            if (show & SHOW_TENDONS) != 0:
                for tendonid in range(ntendon):
                    adr = ten_wrapadr[worldid, tendonid]
                    num = ten_wrapnum[worldid, tendonid]
                    if adr <= pointid and pointid < adr + num - 1:
                        if _wrap_obj(wrap_obj, worldid, pointid) != -2 and \
                                _wrap_obj(wrap_obj, worldid, pointid + 1) != -2:
                            a = _wrap_point(wrap_xpos, worldid, pointid) + off
                            b = _wrap_point(wrap_xpos, worldid, pointid + 1) + off
                            c = ti.Vector([0.9, 0.8, 0.3, 1.0])
        else:
            k3 = item - 3 * nbody - njnt - npoint
            conid, stroke = k3 // 3, k3 % 3
            if (show & SHOW_FORCES) != 0 and conid < ncon[worldid] and conid < nconmax:
                f6 = contact_force_local(worldid, conid, pyramidal, ncon, contact_dim,
                                         contact_friction, contact_efc_address, efc_force)
                frame = contact_frame[worldid, conid]
                fw = ti.Vector([0.0, 0.0, 0.0])
                for i in ti.static(range(3)):
                    for j in ti.static(range(3)):
                        fw[i] += frame[j, i] * f6[j]
                length = fw.norm() * scales[2]
                if length > 1e-6:
                    p0 = _v3(contact_pos, worldid, conid) + off
                    u = fw.normalized()
                    tip = p0 + u * length
                    c = ti.Vector([0.2, 0.98, 0.2, 1.0])
                    if stroke == 0:
                        a, b = p0, tip
                    else:
                        # a head stroke: back from the tip, tilted in a plane with u
                        side = u.cross(ti.Vector([0.0, 0.0, 1.0]))
                        if side.norm() < 1e-3:
                            side = u.cross(ti.Vector([1.0, 0.0, 0.0]))
                        side = side.normalized()
                        sgn = 1.0 if stroke == 1 else -1.0
                        head = ti.min(0.25 * length, scales[3])
                        a, b = tip, tip - u * head + sgn * side * 0.5 * head
        _line(vbo, row, a, b, c)


def overlay_lines(m, d, t, show: int, scales, vbo) -> None:
    """Body frames, joint axes, tendon paths and contact force arrows of every tile.

    Reads xpos, xmat, xanchor, xaxis, ten_wrapadr, ten_wrapnum, wrap_obj, wrap_xpos and
    the contacts (contact_pos, contact_frame, efc_force through contact_force);
    writes the line buffer ``vbo`` (two rows per line)."""
    launch(_overlay_lines, m, d, show=show, scales=scales, tile_world=t.tile_world,
           tile_offset=t.tile_offset, pyramidal=m.opt.cone == CONE_PYRAMIDAL,
           njnt=m.njnt if m.njnt else 0, npoint=t.npoint, nconmax=d.nconmax, ntile=t.ntile,
           per_tile=t.lines_per_tile + 3 * d.nconmax, vbo=vbo)


@ti.kernel
def _overlay_markers(show: ti.i32, scales: ND, params: ND, tile_world: ND, tile_offset: ND,
                     sphere: ND, body_parentid: ND, subtree_com: ND, ncon: ND,
                     contact_pos: ND, nbody: ti.i32, nconmax: ti.i32, ntile: ti.i32,
                     nsphere: ti.i32, vbo: ND):
    """Small spheres per tile: one per contact slot, then one per body (centre of
    mass of each kinematic tree, at its root body)."""
    per_tile = nconmax + nbody
    for tile, item, vertid in ti.ndrange(ntile, per_tile, nsphere):
        worldid = tile_world[tile]
        off = ti.Vector([ti.cast(tile_offset[tile, k], float) for k in ti.static(range(3))])
        row = (tile * per_tile + item) * nsphere + vertid
        unit = _vec3(sphere, vertid, 0)
        centre = ti.Vector([0.0, 0.0, 0.0])
        radius = 0.0
        rgb = ti.Vector([0.0, 0.0, 0.0])
        if item < nconmax:
            if (show & SHOW_CONTACTS) != 0 and item < ncon[worldid]:
                centre = _v3(contact_pos, worldid, item) + off
                radius = scales[4]
                rgb = ti.Vector([0.9, 0.6, 0.2])
        else:
            bodyid = item - nconmax
            if (show & SHOW_COM) != 0 and bodyid > 0 and body_parentid[bodyid] == 0:
                centre = _v3(subtree_com, worldid, bodyid) + off
                radius = scales[5]
                rgb = ti.Vector([0.9, 0.9, 0.9])
        if radius > 0.0:
            p = centre + radius * unit
            view = (_param3(params, P_CAM) - p).normalized()
            lit = (0.45 + 0.55 * ti.max(unit.dot(view), 0.0)) * rgb
            _write_row(vbo, row, p, unit, ti.Vector([lit[0], lit[1], lit[2], 1.0]))
        else:
            _hide_row(vbo, row)


def overlay_markers(m, d, t, show: int, scales, params, vbo) -> None:
    """Contact points and centres of mass as small spheres. Reads ncon, contact_pos,
    subtree_com; writes the marker buffer ``vbo``."""
    launch(_overlay_markers, m, d, show=show, scales=scales, params=params,
           tile_world=t.tile_world, tile_offset=t.tile_offset, sphere=t.marker_sphere,
           nconmax=d.nconmax, ntile=t.ntile, nsphere=t.nmarker_vert, vbo=vbo)


# ------------------------------------------------------------------------ interaction


# perturbation parameters (float vector set by the host)
PERT_LOCALPOS, PERT_REFSELPOS, PERT_REFQUAT = 0, 3, 6
PERT_STIFF, PERT_STIFFROT, PERT_MASS, PERT_INERTIA, PERT_TRANSLATE, PERT_ROTATE = (
    10, 11, 12, 13, 14, 15)
NPERT = 16


@ti.kernel
def _perturb(xpos: ND, xmat: ND, xipos: ND, xquat: ND, cvel: ND, subtree_com: ND,
             body_rootid: ND, body_iquat: ND, worldid: ti.i32, bodyid: ti.i32, prm: ND,
             xfrc_applied: ND):
    for _ in range(1):
        rootid = body_rootid[bodyid]
        rot = ti.Vector([cvel[worldid, bodyid][k] for k in ti.static(range(3))])
        lin_com = ti.Vector([cvel[worldid, bodyid][3 + k] for k in ti.static(range(3))])
        bpos = xpos[worldid, bodyid]
        # mj_objectVelocity: the body's velocity at its frame origin, world axes
        lin = lin_com + rot.cross(bpos - subtree_com[worldid, rootid])
        force = ti.Vector([0.0, 0.0, 0.0])
        torque = ti.Vector([0.0, 0.0, 0.0])
        mass = prm[PERT_MASS]
        inertia = prm[PERT_INERTIA]
        if prm[PERT_TRANSLATE] > 0.5:
            local = ti.Vector([prm[PERT_LOCALPOS + k] for k in ti.static(range(3))])
            ref = ti.Vector([prm[PERT_REFSELPOS + k] for k in ti.static(range(3))])
            selpos = xmat[worldid, bodyid] @ local + bpos
            diff = selpos - ref
            stiffness = prm[PERT_STIFF]
            force = -stiffness * mass * diff
            arm = selpos - xipos[worldid, bodyid]
            svel = rot.cross(arm) + lin
            force += -ti.sqrt(stiffness) * mass * svel
            torque = arm.cross(force)
            dn = diff.norm()
            if dn > MINVAL:
                axis = diff / dn
                torque += -ti.sqrt(prm[PERT_STIFFROT]) * inertia * axis.dot(rot) * axis
        if prm[PERT_ROTATE] > 0.5:
            stiffness = prm[PERT_STIFFROT]
            iq = body_iquat[param_row(worldid, body_iquat), bodyid]
            xiquat = quat_mul(xquat[worldid, bodyid], iq)
            neg = ti.Vector([xiquat[0], -xiquat[1], -xiquat[2], -xiquat[3]])
            ref = ti.Vector([prm[PERT_REFQUAT + k] for k in ti.static(range(4))])
            dif = quat_mul(ref, neg)
            # mju_quat2Vel(dif, 1 / (stiffness inertia))
            axis = ti.Vector([dif[1], dif[2], dif[3]])
            sin_a_2 = axis.norm()
            vel = ti.Vector([0.0, 0.0, 0.0])
            if sin_a_2 > MINVAL:
                angle = 2.0 * ti.atan2(sin_a_2, dif[0])
                if angle > 3.14159265358979:
                    angle -= 2.0 * 3.14159265358979
                vel = axis / sin_a_2 * angle * (stiffness * inertia)
            torque = vel - ti.sqrt(stiffness) * inertia * rot
        for k in ti.static(range(3)):
            xfrc_applied[worldid, bodyid][k] = force[k]
            xfrc_applied[worldid, bodyid][3 + k] = torque[k]


def perturb(m, d, world: int, body: int, prm) -> None:
    """MuJoCo's mouse perturbation (mjv_applyPerturbForce) on the device: a critically
    damped spring pulls the body's selection point to the reference point (force,
    with the torque it makes about the com) and/or its orientation to the reference
    orientation. ``prm``: float ndarray laid out as PERT_*. Reads xpos, xmat, xipos,
    xquat, cvel, subtree_com; writes xfrc_applied[world, body]."""
    launch(_perturb, m, d, worldid=int(world), bodyid=int(body), prm=prm)


@ti.kernel
def _clear_xfrc(xfrc_applied: ND, worldid: ti.i32, bodyid: ti.i32):
    for _ in range(1):
        for k in ti.static(range(6)):
            xfrc_applied[worldid, bodyid][k] = 0.0


def clear_perturb(d, world: int, body: int) -> None:
    """Zero xfrc_applied[world, body] (the perturbation ended)."""
    _clear_xfrc(d.xfrc_applied, int(world), int(body))


@ti.kernel
def _pick_pose(pos: ND, mat: ND, worldid: ti.i32, index: ti.i32, out: ND):
    for _ in range(1):
        for i in ti.static(range(3)):
            out[i] = ti.cast(pos[worldid, index][i], ti.f64)
            for j in ti.static(range(3)):
                out[3 + 3 * i + j] = ti.cast(mat[worldid, index][i, j], ti.f64)


def pick_pose(pos, mat, world: int, index: int, out) -> None:
    """Position and orientation of one element (a body, camera, geom) of one world,
    copied into ``out`` (12 float64: pos, row-major mat) without reading the whole
    arrays back."""
    _pick_pose(pos, mat, int(world), int(index), out)
