"""Passive forces of flexes (the flex parts of MuJoCo 3.4.0's mj_springdamper in
engine_passive.c): thin-plate bending of 2D flexes (flex_bending), the finite-element
elasticity of 2D and 3D flexes (flex_stiffness, with flex_damping's Rayleigh term) and
the edge spring-dampers (flex_edgestiffness, flex_edgedamping).

One launch, three loops over (world, edge), (world, element) and (world, edge), each
adding into qfrc_spring, qfrc_damper and qfrc_passive (atomically: the sums differ
from MuJoCo's serial ones by round-off only). Runs after ``passive`` wrote the joint
and dof terms, like the tendon spring-dampers.

As MuJoCo: the elasticity (and its Rayleigh damping) goes into qfrc_spring whatever
the spring/damper flags (unless both are disabled); the bending damping reads the
vertex velocities straight from qvel (dofs assumed world-aligned sliders). tiphys
deviates in one place: MuJoCo reads the velocity of a pinned vertex (a body without
dofs, body_dofadr = -1) from qvel[-1 ..], memory before qvel; tiphys takes zero. The
two agree unless a 2D flex has bending, flex damping and a pinned vertex in a bending
stencil.
"""
import taichi as ti

from .bind import launch
from .flex import flex_of, point_jac
from .tendon import last_dof

ND = ti.types.ndarray()

# local edges of a triangle and a tetrahedron (MuJoCo's ``edges`` table)
_EDGES2 = ((1, 2), (2, 0), (0, 1))
_EDGES3 = ((0, 1), (1, 2), (2, 0), (2, 3), (0, 3), (1, 3))


@ti.func
def _add_ft(worldid, bodyid, point, force, body_parentid: ti.template(),
            body_dofnum: ti.template(), body_dofadr: ti.template(),
            body_rootid: ti.template(), dof_parentid: ti.template(), cdof: ti.template(),
            subtree_com: ti.template(), qfrc_spring: ti.template(),
            qfrc_passive: ti.template()):
    """mj_applyFT of a force at ``point`` on ``bodyid``, into qfrc_spring."""
    dofid = last_dof(body_parentid, body_dofnum, body_dofadr, bodyid)
    while dofid >= 0:
        f = point_jac(worldid, dofid, point, bodyid, body_rootid, cdof, subtree_com).dot(
            force)
        qfrc_spring[worldid, dofid] += f
        qfrc_passive[worldid, dofid] += f
        dofid = dof_parentid[dofid]


@ti.func
def _element_forces(worldid, elemid, f, dim: ti.template(), timestep,
                    flex_vertadr: ti.template(), flex_edgeadr: ti.template(),
                    flex_elemadr: ti.template(), flex_elemdataadr: ti.template(),
                    flex_elemedgeadr: ti.template(), flex_elem: ti.template(),
                    flex_elemedge: ti.template(), flexedge_length0: ti.template(),
                    flex_stiffness: ti.template(), flex_damping: ti.template(),
                    flexvert_xpos: ti.template(), flexedge_length: ti.template(),
                    flexedge_velocity: ti.template()):
    """The elastic forces on the dim + 1 vertices of one element (MuJoCo's metric
    tensor times the squared-length elongations), and their vertex ids."""
    edges = ti.static(_EDGES2 if dim == 2 else _EDGES3)
    nedge = ti.static(len(edges))
    nvert = ti.static(dim + 1)
    t = elemid - flex_elemadr[f]
    vbase = flex_vertadr[f]
    verts = ti.Vector([vbase + flex_elem[flex_elemdataadr[f] + t * nvert + i]
                       for i in ti.static(range(nvert))])
    kD = 0.0
    if timestep > 0:
        kD = flex_damping[f] / timestep
    elongation = ti.Vector.zero(float, nedge)
    for e in ti.static(range(nedge)):
        idx = flex_edgeadr[f] + flex_elemedge[flex_elemedgeadr[f] + t * nedge + e]
        deformed = flexedge_length[worldid, idx]
        reference = flexedge_length0[idx]
        previous = deformed - flexedge_velocity[worldid, idx] * timestep
        elongation[e] = deformed * deformed - reference * reference + (
            deformed * deformed - previous * previous) * kD
    k = flex_stiffness[elemid]
    force = ti.Matrix.zero(float, nvert, 3)
    for ed1 in ti.static(range(nedge)):
        for ed2 in ti.static(range(nedge)):
            lo = ti.static(min(ed1, ed2))
            hi = ti.static(max(ed1, ed2))
            # upper triangle, row by row: row lo starts at lo * nedge - lo (lo - 1) / 2
            metric = k[ti.static(lo * nedge - lo * (lo - 1) // 2 + hi - lo)]
            grad = flexvert_xpos[worldid, verts[edges[ed2][0]]] - \
                flexvert_xpos[worldid, verts[edges[ed2][1]]]
            for x in ti.static(range(3)):
                force[edges[ed2][0], x] -= elongation[ed1] * grad[x] * metric
                force[edges[ed2][1], x] -= elongation[ed1] * (-grad[x]) * metric
    return verts, force


@ti.kernel
def _flex_bending(
    # model
    body_dofnum: ND, body_dofadr: ND, flex_dim: ND, flex_vertadr: ND, flex_edgeadr: ND,
    flex_edgenum: ND, flex_vertbodyid: ND, flex_edge: ND, flex_edgeflap: ND,
    flex_bending: ND, flex_damping: ND, flex_rigid: ND, nflex: ti.i32,
    nflexedge: ti.i32, nv: ti.i32, has_spring: ti.i32, has_damper: ti.i32,
    # data in
    qvel: ND, flexvert_xpos: ND,
    # data in/out
    qfrc_spring: ND, qfrc_damper: ND, qfrc_passive: ND,
):
    nworld = qvel.shape[0]
    # thin-plate bending of 2D flexes, one interior edge (and its two flaps) a thread
    for worldid, edgeid in ti.ndrange(nworld, nflexedge):
        f = flex_of(edgeid, flex_edgeadr, flex_edgenum, nflex)
        flap = flex_edgeflap[edgeid]
        if flex_dim[f] == 2 and flex_rigid[f] == 0 and flap[1] != -1:
            vbase = flex_vertadr[f]
            edge = flex_edge[edgeid]
            v = ti.Vector([vbase + edge[0], vbase + edge[1], vbase + flap[0],
                           vbase + flap[1]])
            x0 = flexvert_xpos[worldid, v[0]]
            ed0 = flexvert_xpos[worldid, v[1]] - x0
            ed1 = flexvert_xpos[worldid, v[2]] - x0
            ed2 = flexvert_xpos[worldid, v[3]] - x0
            frc1 = ed1.cross(ed2)
            frc2 = ed2.cross(ed0)
            frc3 = ed0.cross(ed1)
            frc = ti.Matrix.rows([-(frc1 + frc2 + frc3), frc1, frc2, frc3])
            b = flex_bending[edgeid]
            vel = ti.Matrix.zero(float, 4, 3)
            for j in ti.static(range(4)):
                bodyid = flex_vertbodyid[v[j]]
                adr = body_dofadr[bodyid]
                if adr >= 0:  # (MuJoCo reads memory before qvel for a pinned vertex)
                    for x in ti.static(range(3)):
                        if adr + x < nv:
                            vel[j, x] = qvel[worldid, adr + x]
            for i in ti.static(range(4)):
                spring = ti.Vector.zero(float, 3)
                damper = ti.Vector.zero(float, 3)
                for j in ti.static(range(4)):
                    xj = flexvert_xpos[worldid, v[j]]
                    for x in ti.static(range(3)):
                        spring[x] += b[4 * i + j] * xj[x]
                        damper[x] += b[4 * i + j] * vel[j, x]
                for x in ti.static(range(3)):
                    spring[x] += b[16] * frc[i, x]
                bodyid = flex_vertbodyid[v[i]]
                adr = body_dofadr[bodyid]
                for x in ti.static(range(3)):
                    if x < body_dofnum[bodyid]:
                        total = 0.0
                        if has_spring != 0:
                            qfrc_spring[worldid, adr + x] -= spring[x]
                            total -= spring[x]
                        if has_damper != 0:
                            dmp = damper[x] * flex_damping[f]
                            qfrc_damper[worldid, adr + x] -= dmp
                            total -= dmp
                        qfrc_passive[worldid, adr + x] += total


@ti.kernel
def _flex_elasticity(
    # model
    body_parentid: ND, body_rootid: ND, body_dofnum: ND, body_dofadr: ND,
    body_simple: ND, dof_parentid: ND, flex_dim: ND, flex_vertadr: ND,
    flex_edgeadr: ND, flex_elemadr: ND, flex_elemnum: ND, flex_elemdataadr: ND,
    flex_elemedgeadr: ND, flex_vertbodyid: ND, flex_elem: ND, flex_elemedge: ND,
    flexedge_length0: ND, flex_stiffness: ND, flex_damping: ND, flex_rigid: ND,
    nflex: ti.i32, nflexelem: ti.i32, timestep: float,
    # data in
    subtree_com: ND, cdof: ND, flexvert_xpos: ND, flexedge_length: ND,
    flexedge_velocity: ND,
    # data in/out
    qfrc_spring: ND, qfrc_passive: ND,
):
    nworld = flexvert_xpos.shape[0]
    # finite-element elasticity of 2D and 3D flexes, one element a thread
    for worldid, elemid in ti.ndrange(nworld, nflexelem):
        f = flex_of(elemid, flex_elemadr, flex_elemnum, nflex)
        dim = flex_dim[f]
        if dim > 1 and flex_rigid[f] == 0 and flex_stiffness[flex_elemadr[f]][0] != 0.0:
            for sdim in ti.static((2, 3)):  # the element size is compile-time
                if dim == sdim:
                    verts, force = _element_forces(
                        worldid, elemid, f, sdim, timestep, flex_vertadr, flex_edgeadr,
                        flex_elemadr, flex_elemdataadr, flex_elemedgeadr, flex_elem,
                        flex_elemedge, flexedge_length0, flex_stiffness, flex_damping,
                        flexvert_xpos, flexedge_length, flexedge_velocity)
                    for i in ti.static(range(sdim + 1)):
                        _add_vertex_force(worldid, verts[i], ti.Vector(
                            [force[i, 0], force[i, 1], force[i, 2]]), flex_vertbodyid,
                            body_simple, body_parentid, body_dofnum, body_dofadr,
                            body_rootid, dof_parentid, cdof, subtree_com, flexvert_xpos,
                            qfrc_spring, qfrc_passive)


@ti.kernel
def _flex_edge_passive(
    # model
    flex_edgeadr: ND, flex_edgenum: ND, flex_edgestiffness: ND, flex_edgedamping: ND,
    flex_rigid: ND, flexedge_rigid: ND, flexedge_length0: ND, nflex: ti.i32,
    nflexedge: ti.i32, has_spring: ti.i32, has_damper: ti.i32,
    # data in
    flexedge_length: ND, flexedge_velocity: ND, flexedge_J_rownnz: ND,
    flexedge_J_rowadr: ND, flexedge_J_colind: ND, flexedge_J: ND,
    # data in/out
    qfrc_spring: ND, qfrc_damper: ND, qfrc_passive: ND,
):
    nworld = flexedge_length.shape[0]
    # edge spring-dampers along the sparse edge Jacobian rows
    for worldid, edgeid in ti.ndrange(nworld, nflexedge):
        f = flex_of(edgeid, flex_edgeadr, flex_edgenum, nflex)
        stiffness = flex_edgestiffness[f] * has_spring
        damping = flex_edgedamping[f] * has_damper
        if flex_rigid[f] == 0 and (stiffness != 0.0 or damping != 0.0) and \
                flexedge_rigid[edgeid] == 0:
            frc_spring = stiffness * (flexedge_length0[edgeid] -
                                      flexedge_length[worldid, edgeid])
            frc_damper = -damping * flexedge_velocity[worldid, edgeid]
            adr = flexedge_J_rowadr[worldid, edgeid]
            for j in range(adr, adr + flexedge_J_rownnz[worldid, edgeid]):
                dofid = flexedge_J_colind[worldid, j]
                jac = flexedge_J[worldid, j]
                qfrc_spring[worldid, dofid] += jac * frc_spring
                qfrc_damper[worldid, dofid] += jac * frc_damper
                qfrc_passive[worldid, dofid] += jac * frc_spring + jac * frc_damper


@ti.func
def _add_vertex_force(worldid, vertid, force, flex_vertbodyid: ti.template(),
                      body_simple: ti.template(), body_parentid: ti.template(),
                      body_dofnum: ti.template(), body_dofadr: ti.template(),
                      body_rootid: ti.template(), dof_parentid: ti.template(),
                      cdof: ti.template(), subtree_com: ti.template(),
                      flexvert_xpos: ti.template(), qfrc_spring: ti.template(),
                      qfrc_passive: ti.template()):
    """A vertex's elastic force into qfrc_spring: straight onto a slider body's dofs,
    through mj_applyFT otherwise (pinned vertices, vertices on general bodies)."""
    bodyid = flex_vertbodyid[vertid]
    if body_simple[bodyid] != 2:
        _add_ft(worldid, bodyid, flexvert_xpos[worldid, vertid], force, body_parentid,
                body_dofnum, body_dofadr, body_rootid, dof_parentid, cdof, subtree_com,
                qfrc_spring, qfrc_passive)
    else:
        adr = body_dofadr[bodyid]
        for x in ti.static(range(3)):
            if x < body_dofnum[bodyid]:
                qfrc_spring[worldid, adr + x] += force[x]
                qfrc_passive[worldid, adr + x] += force[x]


def flex_passive(m, d) -> None:
    """Flex bending, elasticity and edge spring-dampers (three launches in that order:
    one kernel would pass SPIR-V's 32 array arguments; after ``passive``,
    with flex and flex_velocity current); nothing when both the spring and the damper
    flags are disabled (mj_passive returns early), or without flexes.

    Reads qvel, subtree_com, cdof, flexvert_xpos, flexedge_length, flexedge_velocity
    and the sparse flexedge_J; adds to qfrc_spring, qfrc_damper and qfrc_passive.
    """
    has_spring = not m.opt.disabled("spring")
    has_damper = not m.opt.disabled("damper")
    if not m.nflex or not (has_spring or has_damper):
        return
    flags = dict(has_spring=int(has_spring), has_damper=int(has_damper))
    launch(_flex_bending, m, d, **flags)
    launch(_flex_elasticity, m, d, timestep=float(m.opt.timestep))
    launch(_flex_edge_passive, m, d, **flags)
