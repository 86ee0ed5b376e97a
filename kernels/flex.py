"""Flex kinematics: vertex positions, element bounding boxes, edge lengths, Jacobians
and velocities (mj_flex, and the flexedge_velocity line of mj_fwdVelocity), following
MuJoCo 3.4.0's engine_core_smooth.c.

``flex`` runs after com_pos (MuJoCo's mj_fwdKinematics: kinematics, com_pos,
camlight, flex, tendon); ``flex_velocity`` before the other velocities.

tiphys keeps the edge Jacobians sparse whatever the model's jacobian option: MuJoCo's
sparse-mode layout (flexedge_J_rownnz / rowadr / colind, the columns of a row being
the merged dof chains of the edge's two vertex bodies, ascending), packed row after
row. MuJoCo's dense mode holds the same numbers in an nflexedge x nv matrix. Rows of
flexes whose edges cannot make forces (rigid flexes, interpolated ones; MuJoCo's
``skipjacobian``: no edge equality, edge stiffness, edge damping or damping) have no
non-zeros (rownnz = rowadr = 0, as MuJoCo's sparse mode); rigid and interpolated
flexes get no edge lengths either (MuJoCo does not compute them). tiphys computes the
row addresses as one running sum over the rows. (MuJoCo's recurrence restarts at 0
after a flex without Jacobian rows, so in its sparse mode a later flex's rows
overwrite an earlier one's: with a Jacobian-less flex between two others, MuJoCo's
first flex uses the third one's values; tiphys keeps every row.)

Flex equalities (mjEQ_FLEX) become constraint rows in kernels/constraint.py, one per
non-rigid edge with a Jacobian row (``flex_eq_rows``, ``edge_row_nonempty`` here).

Interpolated flexes (flex_interp > 0) are refused by ``check_flex``, with the flex
collisions tiphys does not simulate yet (kernels/collide_flex.py ``unsupported``).
"""
import weakref

import numpy as np
import taichi as ti

from .bind import launch
from .config import options_of
from .tendon import last_dof

ND = ti.types.ndarray()


@ti.func
def flex_of(index, adr: ti.template(), num: ti.template(), nflex):
    """The flex whose range adr[f] .. adr[f] + num[f] holds ``index``."""
    found = 0
    for f in range(nflex):
        if adr[f] <= index and index < adr[f] + num[f]:
            found = f
    return found


@ti.func
def edge_has_jacobian(f, flex_rigid: ti.template(), flex_interp: ti.template(),
                      flex_edgeequality: ti.template(), flex_edgedamping: ti.template(),
                      flex_edgestiffness: ti.template(), flex_damping: ti.template()):
    """Whether mj_flex computes the Jacobian rows of flex f's edges."""
    ok = flex_rigid[f] == 0 and flex_interp[f] == 0
    if flex_edgeequality[f] == 0 and flex_edgedamping[f] == 0.0 and \
            flex_edgestiffness[f] == 0.0 and flex_damping[f] == 0.0:
        ok = False
    return ok


@ti.func
def chain_count(b1, b2, body_parentid: ti.template(), body_dofnum: ti.template(),
                body_dofadr: ti.template(), dof_parentid: ti.template()):
    """How many dofs move body b1 or b2 (mj_mergeChain's length)."""
    d1 = last_dof(body_parentid, body_dofnum, body_dofadr, b1)
    d2 = last_dof(body_parentid, body_dofnum, body_dofadr, b2)
    k = 0
    while d1 >= 0 or d2 >= 0:
        dofid = ti.max(d1, d2)
        k += 1
        if dofid == d1:
            d1 = dof_parentid[d1]
        if dofid == d2:
            d2 = dof_parentid[d2]
    return k


@ti.func
def point_jac(worldid, dofid, point, bodyid, body_rootid: ti.template(),
              cdof: ti.template(), subtree_com: ti.template()):
    """Translational Jacobian column ``dofid`` of ``point`` on ``bodyid`` (mj_jac)."""
    cd = cdof[worldid, dofid]
    rot = ti.Vector([cd[0], cd[1], cd[2]])
    lin = ti.Vector([cd[3], cd[4], cd[5]])
    return lin + rot.cross(point - subtree_com[worldid, body_rootid[bodyid]])


@ti.func
def edge_row_nonempty(worldid, edgeid, flexedge_J_rownnz: ti.template(),
                      flexedge_J_rowadr: ti.template(), flexedge_J: ti.template(),
                      sparse: ti.template()):
    """Whether mj_addConstraint keeps an edge's equality row: columns (sparse), a
    non-zero value (dense)."""
    nnz = flexedge_J_rownnz[worldid, edgeid]
    keep = nnz > 0
    if ti.static(not sparse):
        keep = False
        adr = flexedge_J_rowadr[worldid, edgeid]
        for j in range(adr, adr + nnz):
            if flexedge_J[worldid, j] != 0.0:
                keep = True
    return keep


@ti.func
def flex_eq_rows(worldid, f, row0, nnz0, write: ti.template(), flex_edgeadr: ti.template(),
                 flex_edgenum: ti.template(), flexedge_rigid: ti.template(),
                 flexedge_J_rownnz: ti.template(), flexedge_J_rowadr: ti.template(),
                 flexedge_J: ti.template(), efc_J_rownnz: ti.template(),
                 efc_J_rowadr: ti.template(), sparse: ti.template()):
    """The rows of a flex equality (one per non-rigid edge with a Jacobian row) and
    their non-zeros; with ``write``, the sparse rows' rownnz / rowadr from row0, nnz0."""
    rows = 0
    nnz = 0
    for edgeid in range(flex_edgeadr[f], flex_edgeadr[f] + flex_edgenum[f]):
        if flexedge_rigid[edgeid] == 0 and edge_row_nonempty(
                worldid, edgeid, flexedge_J_rownnz, flexedge_J_rowadr, flexedge_J, sparse):
            width = flexedge_J_rownnz[worldid, edgeid]
            if ti.static(write):
                efc_J_rownnz[worldid, row0 + rows] = width
                efc_J_rowadr[worldid, row0 + rows] = nnz0 + nnz
            rows += 1
            nnz += width
    return rows, nnz


@ti.kernel
def _flex_vert(
    # model
    flex_dim: ND, flex_vertadr: ND, flex_vertnum: ND, flex_elemadr: ND, flex_elemnum: ND,
    flex_elemdataadr: ND, flex_vertbodyid: ND, flex_elem: ND, flex_vert: ND,
    flex_radius: ND, flex_centered: ND, nflex: ti.i32, nflexvert: ti.i32,
    nflexelem: ti.i32,
    # data in
    xpos: ND, xmat: ND,
    # data out
    flexvert_xpos: ND, flexelem_aabb: ND,
):
    """mj_flex's first half: vertex positions and element bounding boxes."""
    nworld = xpos.shape[0]
    # vertex positions (interpolated flexes are refused on the host)
    for worldid, vertid in ti.ndrange(nworld, nflexvert):
        f = flex_of(vertid, flex_vertadr, flex_vertnum, nflex)
        bodyid = flex_vertbodyid[vertid]
        pos = xpos[worldid, bodyid]
        if flex_centered[f] == 0:
            pos = xmat[worldid, bodyid] @ flex_vert[vertid] + pos
        flexvert_xpos[worldid, vertid] = pos
    # element bounding boxes (center, half size + radius)
    for worldid, elemid in ti.ndrange(nworld, nflexelem):
        f = flex_of(elemid, flex_elemadr, flex_elemnum, nflex)
        dim = flex_dim[f]
        data = flex_elemdataadr[f] + (elemid - flex_elemadr[f]) * (dim + 1)
        vbase = flex_vertadr[f]
        first = flexvert_xpos[worldid, vbase + flex_elem[data]]
        lo = first
        hi = first
        for i in range(1, dim + 1):
            p = flexvert_xpos[worldid, vbase + flex_elem[data + i]]
            lo = ti.min(lo, p)
            hi = ti.max(hi, p)
        center = 0.5 * (hi + lo)
        size = 0.5 * (hi - lo) + flex_radius[f]
        flexelem_aabb[worldid, elemid] = ti.Vector([center[0], center[1], center[2],
                                                    size[0], size[1], size[2]])


@ti.kernel
def _flex_edge(
    # model
    body_parentid: ND, body_rootid: ND, body_dofnum: ND, body_dofadr: ND,
    dof_parentid: ND, flex_interp: ND, flex_vertadr: ND, flex_edgeadr: ND,
    flex_edgenum: ND, flex_vertbodyid: ND, flex_edge: ND, flex_damping: ND,
    flex_edgestiffness: ND, flex_edgedamping: ND, flex_edgeequality: ND, flex_rigid: ND,
    nflex: ti.i32, nflexedge: ti.i32,
    # data in
    flexvert_xpos: ND, subtree_com: ND, cdof: ND,
    # data out
    flexedge_J_rownnz: ND, flexedge_J_rowadr: ND, flexedge_J_colind: ND, flexedge_J: ND,
    flexedge_length: ND,
):
    """mj_flex's second half: edge lengths and sparse edge Jacobians (apart from
    _flex_vert: one kernel would pass SPIR-V's 32 array arguments)."""
    nworld = flexvert_xpos.shape[0]
    # edge lengths and the number of non-zeros of each Jacobian row
    for worldid, edgeid in ti.ndrange(nworld, nflexedge):
        f = flex_of(edgeid, flex_edgeadr, flex_edgenum, nflex)
        nnz = 0
        if flex_rigid[f] == 0 and flex_interp[f] == 0:
            vbase = flex_vertadr[f]
            v1 = vbase + flex_edge[edgeid][0]
            v2 = vbase + flex_edge[edgeid][1]
            vec = flexvert_xpos[worldid, v2] - flexvert_xpos[worldid, v1]
            flexedge_length[worldid, edgeid] = vec.norm()
            if edge_has_jacobian(f, flex_rigid, flex_interp, flex_edgeequality,
                                 flex_edgedamping, flex_edgestiffness, flex_damping):
                nnz = chain_count(flex_vertbodyid[v1], flex_vertbodyid[v2], body_parentid,
                                  body_dofnum, body_dofadr, dof_parentid)
        flexedge_J_rownnz[worldid, edgeid] = nnz
    # row addresses: a running sum per world (rows without Jacobian: address 0)
    for worldid in range(nworld):
        adr = 0
        for edgeid in range(nflexedge):
            f = flex_of(edgeid, flex_edgeadr, flex_edgenum, nflex)
            if edge_has_jacobian(f, flex_rigid, flex_interp, flex_edgeequality,
                                 flex_edgedamping, flex_edgestiffness, flex_damping):
                flexedge_J_rowadr[worldid, edgeid] = adr
                adr += flexedge_J_rownnz[worldid, edgeid]
            else:
                flexedge_J_rowadr[worldid, edgeid] = 0
    # Jacobian rows: vec' (jac(pos2 on b2) - jac(pos1 on b1)) over the merged chain
    for worldid, edgeid in ti.ndrange(nworld, nflexedge):
        nnz = flexedge_J_rownnz[worldid, edgeid]
        if nnz > 0:
            f = flex_of(edgeid, flex_edgeadr, flex_edgenum, nflex)
            vbase = flex_vertadr[f]
            v1 = vbase + flex_edge[edgeid][0]
            v2 = vbase + flex_edge[edgeid][1]
            b1 = flex_vertbodyid[v1]
            b2 = flex_vertbodyid[v2]
            pos1 = flexvert_xpos[worldid, v1]
            pos2 = flexvert_xpos[worldid, v2]
            vec = pos2 - pos1
            length = vec.norm()
            if length >= 1e-15:  # mju_normalize3's threshold (mjMINVAL)
                vec = vec / length
            else:
                vec = ti.Vector([1.0, 0.0, 0.0])
            d1 = last_dof(body_parentid, body_dofnum, body_dofadr, b1)
            d2 = last_dof(body_parentid, body_dofnum, body_dofadr, b2)
            slot = flexedge_J_rowadr[worldid, edgeid] + nnz - 1
            while d1 >= 0 or d2 >= 0:
                dofid = ti.max(d1, d2)
                jac = ti.Vector([0.0, 0.0, 0.0])
                if dofid == d2:
                    jac += point_jac(worldid, dofid, pos2, b2, body_rootid, cdof, subtree_com)
                    d2 = dof_parentid[d2]
                if dofid == d1:
                    jac -= point_jac(worldid, dofid, pos1, b1, body_rootid, cdof, subtree_com)
                    d1 = dof_parentid[d1]
                flexedge_J[worldid, slot] = jac.dot(vec)
                flexedge_J_colind[worldid, slot] = dofid
                slot -= 1


def flex(m, d) -> None:
    """mj_flex: flex vertex positions, element bounding boxes, edge lengths and the
    sparse edge Jacobians (one launch). Raises NotImplementedError when the model's
    current options let a flex collide (``check_flex``, once per options).

    Reads xpos, xmat, subtree_com, cdof; writes flexvert_xpos, flexelem_aabb,
    flexedge_length, flexedge_J_rownnz, flexedge_J_rowadr, flexedge_J_colind,
    flexedge_J.
    """
    if not m.nflex:
        return
    opt = options_of(m)
    if _CHECKED.get(m) is not opt:
        check_flex(m, "flex")
        _CHECKED[m] = opt
    launch(_flex_vert, m, d)
    launch(_flex_edge, m, d)


# the options each model's flexes were last checked under (a contact flag enabled
# after make_data must not let a colliding flex step without its contacts)
_CHECKED: "weakref.WeakKeyDictionary" = weakref.WeakKeyDictionary()


@ti.kernel
def _flex_velocity(
    # model
    nflexedge: ti.i32,
    # data in
    qvel: ND, flexedge_J_rownnz: ND, flexedge_J_rowadr: ND, flexedge_J_colind: ND,
    flexedge_J: ND,
    # data out
    flexedge_velocity: ND,
):
    nworld = qvel.shape[0]
    for worldid, edgeid in ti.ndrange(nworld, nflexedge):
        adr = flexedge_J_rowadr[worldid, edgeid]
        vel = 0.0
        for j in range(adr, adr + flexedge_J_rownnz[worldid, edgeid]):
            vel += flexedge_J[worldid, j] * qvel[worldid, flexedge_J_colind[worldid, j]]
        flexedge_velocity[worldid, edgeid] = vel


def flex_velocity(m, d) -> None:
    """flexedge_velocity = flexedge_J qvel (mj_fwdVelocity's first line; zero for the
    edges without a Jacobian row).

    Reads qvel and the sparse flexedge_J; writes flexedge_velocity.
    """
    if not m.nflex:
        return
    launch(_flex_velocity, m, d)


# ------------------------------------------------------------------------------------
# host side: Jacobian capacity and what tiphys refuses
# ------------------------------------------------------------------------------------

def _flex_names(m) -> list:
    names = list(getattr(m, "names", {}).get("flex", []))
    return [names[f] if f < len(names) and names[f] else f"#{f}" for f in range(m.nflex)]


def flex_jacobian_nnz(m) -> int:
    """Non-zeros of all flex edge Jacobian rows (the size nJflex of flexedge_J and
    flexedge_J_colind per world): the merged dof chains of each edge's two bodies,
    over the edges of flexes mj_flex computes Jacobians for."""
    a = m.arrays
    if not m.nflex:
        return 0
    parent = np.asarray(a.body_parentid)
    dofnum = np.asarray(a.body_dofnum)
    sets = [frozenset()] * m.nbody  # per body: the dofs moving it
    dofadr = np.asarray(a.body_dofadr)
    for b in range(1, m.nbody):
        own = frozenset(range(int(dofadr[b]), int(dofadr[b]) + int(dofnum[b])))
        sets[b] = sets[int(parent[b])] | own
    total = 0
    vertbody = np.asarray(a.flex_vertbodyid)
    edges = np.asarray(a.flex_edge).reshape(-1, 2)
    for f in range(m.nflex):
        rigid = int(np.asarray(a.flex_rigid)[f]) or int(np.asarray(a.flex_interp)[f])
        jac = (int(np.asarray(a.flex_edgeequality)[f]) or
               float(np.asarray(a.flex_edgedamping)[f]) != 0 or
               float(np.asarray(a.flex_edgestiffness)[f]) != 0 or
               float(np.asarray(a.flex_damping)[f]) != 0)
        if rigid or not jac:
            continue
        vbase = int(np.asarray(a.flex_vertadr)[f])
        e0 = int(np.asarray(a.flex_edgeadr)[f])
        for e in range(e0, e0 + int(np.asarray(a.flex_edgenum)[f])):
            b1 = int(vertbody[vbase + edges[e, 0]])
            b2 = int(vertbody[vbase + edges[e, 1]])
            total += len(sets[b1] | sets[b2])
    return total


def flex_can_collide(m, f: int) -> bool:
    """Whether flex f may make contacts under the model's options (contype or
    conaffinity set, contacts and constraints enabled)."""
    a = m.arrays
    if m.opt.disabled("contact") or m.opt.disabled("constraint"):
        return False
    return bool(int(np.asarray(a.flex_contype)[f]) or int(np.asarray(a.flex_conaffinity)[f]))


def unsupported_flex(m) -> list:
    """What of the model's flexes tiphys does not simulate yet, as phrases naming the
    flex (empty: every flex is simulated as MuJoCo does)."""
    if not m.nflex:
        return []
    a = m.arrays
    names = _flex_names(m)
    out = []
    if any(flex_can_collide(m, f) for f in range(m.nflex)):
        from .collide_flex import unsupported
        from .collision_driver import plan
        p = plan(m)
        for f in getattr(p, "dynamic_flex", ()):
            out.append(f"flex collisions with the dynamic broadphase (flex {names[f]!r} "
                       f"in a model of many geoms)")
        out.extend(f"flex collisions: {phrase}"
                   for phrase in unsupported(m, p.flex_entries, names))
    for f in range(m.nflex):
        if int(np.asarray(a.flex_interp)[f]):
            out.append(f"interpolated flexes (flex {names[f]!r}: flexcomp dof="
                       f"\"trilinear\"/\"quadratic\", flex_interp="
                       f"{int(np.asarray(a.flex_interp)[f])})")
    return out


def check_flex(m, func: str) -> None:
    """NotImplementedError naming every flex feature of the model tiphys does not
    simulate yet (see ``unsupported_flex``)."""
    missing = unsupported_flex(m)
    if missing:
        hint = ""
        if any(x.startswith("flex collisions") for x in missing):
            hint = (" (to simulate the flex without them: set its contype and conaffinity "
                    "to 0, or disable contacts with <flag contact=\"disable\"/>)")
        raise NotImplementedError(f"{func}: " + "; ".join(missing) + " not supported yet"
                                  + hint)
