"""Constraint islands: island (mj_island, MuJoCo's src/engine/engine_island.c).

Two kinematic trees are in the same island when a constraint couples them; a tree
that some constraint touches alone (a body on the floor, a joint limit, a weld to the
world) is an island of its own; trees that no constraint touches are in none. The
static world joins nothing. The Newton and CG solvers then solve each island on its
own (kernels/solver.py).

Which trees a constraint touches, as MuJoCo decides it: dof friction and joint
limits, the tree of the dof or joint; contacts between geoms, the trees of the two
geoms' bodies; connect and weld equalities, the trees of their two bodies (of the
sites' bodies with site semantics); every other row (joint and tendon equalities,
tendon friction and limits, flex contacts), the trees of the nonzero columns of its
Jacobian row. A constraint of several rows (a contact, a weld) is read from its
first row, as MuJoCo's edge search, which skips rows with the type and id of the row
before (except a flex equality's, one row per edge); each row's own island is that of the first tree its row names.

Islands are numbered in the order of their smallest tree (MuJoCo's flood fill starts
from trees in order), trees, dofs and rows are listed by island in their own order
(the "itree", "idof" and "iefc" orders), and the unconstrained trees and dofs follow
in order: every field of mj_island's output but the copies it gathers for the solver
(iM, iLD, iefc_J, iefc_D, ...), which tiphys's solver reads through the maps instead.

Per world, one launch finds each row's trees (one thread per (world, row)), a second
one thread per world joins trees in a union-find (smaller root wins, so a component's
root is its smallest tree and its island number is the rank of that root) and counts
and orders trees, dofs and rows. Where MuJoCo stops with an error (a contact between
two static bodies, a Jacobian row without nonzeros) the row is left in no island
(efc_island = -1, map_efc2iefc = -1); the solver then treats the world whole.
"""
import taichi as ti

from .bind import launch
from .consts import (CNSTR_CONTACT_ELLIPTIC, CNSTR_CONTACT_FRICTIONLESS,
                     CNSTR_CONTACT_PYRAMIDAL, CNSTR_EQUALITY, CNSTR_FRICTION_DOF,
                     CNSTR_FRICTION_TENDON, CNSTR_LIMIT_JOINT, EQ_CONNECT, EQ_FLEX, EQ_WELD,
                     OBJ_SITE)

ND = ti.types.ndarray()

# the second tree of a row whose trees come from its Jacobian (treeFirst's scan)
SCAN_JACOBIAN = -2


@ti.kernel
def _row_trees(
    # model
    nv: ti.i32, dof_treeid: ND, jnt_dofadr: ND, geom_bodyid: ND, body_treeid: ND,
    site_bodyid: ND, eq_type: ND, eq_obj1id: ND, eq_obj2id: ND, eq_objtype: ND,
    # data in
    nefc: ND, efc_type: ND, efc_id: ND, efc_J: ND, contact_geom: ND, efc_J_rownnz: ND,
    efc_J_rowadr: ND, efc_J_colind: ND,
    # data out (scratch until _islands: first tree of each row, second tree)
    efc_island: ND, map_efc2iefc: ND,
    sparse: ti.template(),
):
    """Each row's first tree and, where the constraint type names them, its second
    tree (-1: none) or SCAN_JACOBIAN (treeFirst)."""
    for worldid, efcid in ti.ndrange(efc_type.shape[0], efc_type.shape[1]):
        if efcid < nefc[worldid]:
            etype = efc_type[worldid, efcid]
            objid = efc_id[worldid, efcid]
            tree0 = -1
            tree1 = SCAN_JACOBIAN
            if etype == CNSTR_FRICTION_DOF:
                tree0 = dof_treeid[objid]
                tree1 = -1
            elif etype == CNSTR_LIMIT_JOINT:
                tree0 = dof_treeid[jnt_dofadr[objid]]
                tree1 = -1
            elif (etype == CNSTR_CONTACT_FRICTIONLESS) | (etype == CNSTR_CONTACT_PYRAMIDAL) | \
                    (etype == CNSTR_CONTACT_ELLIPTIC):
                geom = contact_geom[worldid, objid]
                if (geom[0] >= 0) & (geom[1] >= 0):  # flex contacts: from the Jacobian
                    tree0 = body_treeid[geom_bodyid[geom[0]]]
                    tree1 = body_treeid[geom_bodyid[geom[1]]]
            elif etype == CNSTR_EQUALITY:
                if (eq_type[objid] == EQ_CONNECT) | (eq_type[objid] == EQ_WELD):
                    body1 = eq_obj1id[objid]
                    body2 = eq_obj2id[objid]
                    if eq_objtype[objid] == OBJ_SITE:
                        body1 = site_bodyid[body1]
                        body2 = site_bodyid[body2]
                    tree0 = body_treeid[body1]
                    tree1 = body_treeid[body2]
            if tree1 == SCAN_JACOBIAN:
                if ti.static(sparse):  # the row's columns, whatever their values
                    adr = efc_J_rowadr[worldid, efcid]
                    for k in range(efc_J_rownnz[worldid, efcid]):
                        if tree0 < 0:
                            tree0 = dof_treeid[efc_J_colind[worldid, adr + k]]
                else:
                    for dofid in range(nv):
                        if (tree0 < 0) & (efc_J[worldid, efcid, dofid] != 0.0):
                            tree0 = dof_treeid[dofid]
            elif tree0 < 0:  # the static body second
                tree0 = tree1
                tree1 = -1
            efc_island[worldid, efcid] = tree0
            map_efc2iefc[worldid, efcid] = tree1


@ti.func
def _find(worldid, tree, parent: ti.template()):
    """Root of ``tree`` in the union-find ``parent`` (path halving)."""
    node = tree
    while parent[worldid, node] != node:
        grand = parent[worldid, parent[worldid, node]]
        parent[worldid, node] = grand
        node = grand
    return node


@ti.func
def _join(worldid, tree1, tree2, parent: ti.template(), touched: ti.template()):
    """An edge between two trees (one tree: a self-edge)."""
    touched[worldid, tree1] = 1
    touched[worldid, tree2] = 1
    root1 = _find(worldid, tree1, parent)
    root2 = _find(worldid, tree2, parent)
    if root1 < root2:
        parent[worldid, root2] = root1
    elif root2 < root1:
        parent[worldid, root1] = root2


@ti.kernel
def _islands(
    # model
    nv: ti.i32, ntree: ti.i32, dof_treeid: ND, eq_type: ND,
    # data in
    nefc: ND, efc_type: ND, efc_id: ND, efc_J: ND, efc_J_rownnz: ND, efc_J_rowadr: ND,
    efc_J_colind: ND,
    # data out
    nisland: ND, nidof: ND, tree_island: ND, island_ntree: ND, island_itreeadr: ND,
    map_itree2tree: ND, dof_island: ND, island_nv: ND, island_idofadr: ND,
    island_dofadr: ND, map_dof2idof: ND, map_idof2dof: ND, efc_island: ND,
    island_ne: ND, island_nf: ND, island_nefc: ND, island_iefcadr: ND,
    map_efc2iefc: ND, map_iefc2efc: ND,
    sparse: ti.template(),
):
    """Union-find of the trees over the constraints' edges, island numbers, counts,
    addresses and maps (mj_island after findEdges), one thread per world.

    Until the islands are numbered, map_itree2tree holds the union-find parents and
    island_ntree (indexed by tree) whether a tree has an edge; each X_adr array walks
    as the insertion pointer of its map and is set back afterwards."""
    for worldid in range(nefc.shape[0]):
        n = nefc[worldid]
        for treeid in range(ntree):
            map_itree2tree[worldid, treeid] = treeid
            island_ntree[worldid, treeid] = 0
        # edges: each constraint once (rows with the type and id of the row before
        # belong to the same constraint), but every row of a flex equality (each its
        # own edge's trees)
        prev_type = -1
        prev_id = -1
        for efcid in range(n):
            etype = efc_type[worldid, efcid]
            objid = efc_id[worldid, efcid]
            flex_eq = False
            if etype == CNSTR_EQUALITY:
                flex_eq = eq_type[objid] == EQ_FLEX
            if (etype != prev_type) | (objid != prev_id) | flex_eq:
                prev_type = etype
                prev_id = objid
                tree0 = efc_island[worldid, efcid]
                tree1 = map_efc2iefc[worldid, efcid]
                if tree1 != SCAN_JACOBIAN:
                    if tree0 >= 0:
                        if tree1 < 0:
                            tree1 = tree0
                        _join(worldid, tree0, tree1, map_itree2tree, island_ntree)
                elif ti.static(sparse):
                    # every tree of the row's columns joins the first one (MuJoCo's
                    # sparse rows: structural columns, whatever their values)
                    adr = efc_J_rowadr[worldid, efcid]
                    for k in range(efc_J_rownnz[worldid, efcid]):
                        _join(worldid, tree0, dof_treeid[efc_J_colind[worldid, adr + k]],
                              map_itree2tree, island_ntree)
                else:
                    # every tree with a nonzero column joins the first one
                    for dofid in range(nv):
                        if efc_J[worldid, efcid, dofid] != 0.0:
                            _join(worldid, tree0, dof_treeid[dofid], map_itree2tree,
                                  island_ntree)
        # islands in the order of their smallest tree (each component's root)
        count = 0
        for treeid in range(ntree):
            island = -1
            if island_ntree[worldid, treeid]:
                root = _find(worldid, treeid, map_itree2tree)
                if root == treeid:
                    island = count
                    count += 1
                else:
                    island = tree_island[worldid, root]
            tree_island[worldid, treeid] = island
        nisland[worldid] = count
        # trees
        for island in range(count):
            island_ntree[worldid, island] = 0
        for treeid in range(ntree):
            island = tree_island[worldid, treeid]
            if island >= 0:
                island_ntree[worldid, island] += 1
        adr = 0
        for island in range(count):
            island_itreeadr[worldid, island] = adr
            adr += island_ntree[worldid, island]
        free = adr
        for treeid in range(ntree):
            island = tree_island[worldid, treeid]
            if island >= 0:
                map_itree2tree[worldid, island_itreeadr[worldid, island]] = treeid
                island_itreeadr[worldid, island] += 1
            else:
                map_itree2tree[worldid, free] = treeid
                free += 1
        for island in range(count):
            island_itreeadr[worldid, island] -= island_ntree[worldid, island]
        # dofs
        for island in range(count):
            island_nv[worldid, island] = 0
        for dofid in range(nv):
            island = tree_island[worldid, dof_treeid[dofid]]
            dof_island[worldid, dofid] = island
            if island >= 0:
                island_nv[worldid, island] += 1
        adr = 0
        for island in range(count):
            island_idofadr[worldid, island] = adr
            adr += island_nv[worldid, island]
        nidof[worldid] = adr
        free = adr
        for dofid in range(nv):
            island = dof_island[worldid, dofid]
            idof = free
            if island >= 0:
                idof = island_idofadr[worldid, island]
                island_idofadr[worldid, island] += 1
            else:
                free += 1
            map_dof2idof[worldid, dofid] = idof
            map_idof2dof[worldid, idof] = dofid
        for island in range(count):
            island_idofadr[worldid, island] -= island_nv[worldid, island]
            island_dofadr[worldid, island] = \
                map_idof2dof[worldid, island_idofadr[worldid, island]]
        # rows
        for island in range(count):
            island_ne[worldid, island] = 0
            island_nf[worldid, island] = 0
            island_nefc[worldid, island] = 0
        for efcid in range(n):
            tree0 = efc_island[worldid, efcid]
            island = -1
            if tree0 >= 0:
                island = tree_island[worldid, tree0]
            efc_island[worldid, efcid] = island
            map_iefc2efc[worldid, efcid] = -1
            if island >= 0:
                island_nefc[worldid, island] += 1
                etype = efc_type[worldid, efcid]
                if etype == CNSTR_EQUALITY:
                    island_ne[worldid, island] += 1
                elif (etype == CNSTR_FRICTION_DOF) | (etype == CNSTR_FRICTION_TENDON):
                    island_nf[worldid, island] += 1
        adr = 0
        for island in range(count):
            island_iefcadr[worldid, island] = adr
            adr += island_nefc[worldid, island]
        for efcid in range(n):
            island = efc_island[worldid, efcid]
            iefc = -1
            if island >= 0:
                iefc = island_iefcadr[worldid, island]
                island_iefcadr[worldid, island] += 1
                map_iefc2efc[worldid, iefc] = efcid
            map_efc2iefc[worldid, efcid] = iefc
        for island in range(count):
            island_iefcadr[worldid, island] -= island_nefc[worldid, island]


def island(m, d) -> None:
    """Constraint islands of every world, as mj_island (run after make_constraint).

    Reads nefc, efc_type, efc_id, efc_J (sparse-Jacobian models: the rows' column
    lists efc_J_rownnz / rowadr / colind instead, as MuJoCo) and contact_geom; writes nisland, nidof,
    tree_island, island_ntree, island_itreeadr, map_itree2tree, dof_island, island_nv,
    island_idofadr, island_dofadr, map_dof2idof, map_idof2dof, efc_island, island_ne,
    island_nf, island_nefc, island_iefcadr, map_efc2iefc and map_iefc2efc (island_*
    up to nisland[w], efc ones up to nefc[w]). A world without rows gets nisland =
    nidof = 0, its trees and dofs in no island. With <flag island="disable"/> only
    nisland = nidof = 0 are written, as MuJoCo.
    """
    if m.opt.disabled("island"):
        clear_islands(d)
        return
    launch(_row_trees, m, d, sparse=m.is_sparse)
    launch(_islands, m, d, sparse=m.is_sparse)
    d._islands_set = True


def clear_islands(d) -> None:
    """nisland = nidof = 0 in every world (once, after islands were found)."""
    if d._islands_set:
        d.nisland.fill(0)
        d.nidof.fill(0)
        d._islands_set = False
