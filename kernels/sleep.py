"""Sleeping trees: MuJoCo 3.4.0's engine_sleep.c (<option><flag sleep="enable"/>).

A kinematic tree whose every dof moves slower than ``opt.sleep_tolerance`` (weighted
by dof_length, infinity norm) for mjMINAWAKE steps in a row, with no applied force,
falls asleep together with every tree of its constraint island: its qvel and qacc
become zero, it is no longer integrated, and no contact between it and another
sleeping or static body is made. A tree wakes when the user moves it (qpos, qvel,
qfrc_applied or xfrc_applied), when an awake tree touches it, or when an active
equality or a limited tendon ties it to an awake tree. ``tree_asleep`` is the state
(< 0: awake, counting up to -1 while slow; >= 0: asleep, the next tree of its sleep
cycle, so that a sleeping island wakes whole); ``tree_awake``, ``body_awake``
(mjtSleepState) and the awake index lists follow from it (mj_updateSleep).

tiphys computes every stage for every tree, asleep or not; the sleep state decides
what MuJoCo's does differently: the contacts kept (wake_contacts),
the constraint rows made (constraint._scan), which sensors keep their value
(keep_sensors), and which trees the integrator moves (integrate.py). Positions and
velocities of sleeping trees are unchanged, so what MuJoCo leaves stale equals what
tiphys recomputes there (checked: qfrc_bias, qfrc_constraint, qacc_smooth, qacc),
except where MuJoCo's stale values are not those of a state at rest: mj_inverse's
qfrc_inverse of sleeping dofs is whatever it held before (its RNE skips them), tiphys
computes it.

Each world's sleep bookkeeping is serial (one thread per world), as MuJoCo's.
"""
from types import SimpleNamespace

import numpy as np
import taichi as ti

from . import config
from .bind import launch
from .config import per_options
from .constraint import eq_bodies, limit_sides
from .consts import (EQ_CONNECT, EQ_JOINT, EQ_TENDON, EQ_WELD, OBJ_ACTUATOR, OBJ_BODY,
                     OBJ_CAMERA, OBJ_DOF, OBJ_GEOM, OBJ_JOINT, OBJ_LIGHT, OBJ_SITE,
                     OBJ_TENDON, OBJ_UNKNOWN, OBJ_XBODY, SENS_CONTACT, SENS_PLUGIN,
                     SENS_RANGEFINDER, SENS_USER, TRN_BODY, TRN_JOINT, TRN_JOINTINPARENT,
                     TRN_SITE, TRN_SLIDERCRANK, TRN_TENDON)
from .math import param_row

ND = ti.types.ndarray()

MINAWAKE = 10  # mjMINAWAKE: steps a tree must stay slow before it may sleep
AWAKE = -(1 + MINAWAKE)  # tree_asleep of a fully awake tree
S_STATIC, S_ASLEEP, S_AWAKE = -1, 0, 1  # mjtSleepState
# mjtSleepPolicy values
POLICY_AUTO_NEVER, POLICY_AUTO_ALLOWED, POLICY_NEVER, POLICY_ALLOWED, POLICY_INIT = 1, 2, 3, 4, 5


# ---------------------------------------------------------------------------------------
# mj_updateSleep: the awake arrays from tree_asleep
# ---------------------------------------------------------------------------------------

@ti.func
def _update_world(w, staticawake, ntree, nbody, nv, body_treeid: ti.template(),
                  body_parentid: ti.template(), body_rootid: ti.template(),
                  body_mocapid: ti.template(), dof_bodyid: ti.template(),
                  tree_asleep: ti.template(), tree_awake: ti.template(),
                  body_awake: ti.template(), body_awake_ind: ti.template(),
                  parent_awake_ind: ti.template(), dof_awake_ind: ti.template(),
                  ntree_awake: ti.template(), nbody_awake: ti.template(),
                  nparent_awake: ti.template(), nv_awake: ti.template()):
    """mj_updateSleepInit for world w: static bodies are STATIC (AWAKE with
    ``staticawake``, as at reset), mocap bodies and their subtrees AWAKE."""
    nt = 0
    for i in range(ntree):
        awake = 1 if tree_asleep[w, i] < 0 else 0
        tree_awake[w, i] = awake
        nt += awake
    ntree_awake[w] = nt
    nb = 0
    npar = 0
    for i in range(nbody):
        state = S_AWAKE
        tree = body_treeid[i]
        if tree < 0:
            if body_mocapid[body_rootid[i]] < 0 and staticawake == 0:
                state = S_STATIC
        elif tree_awake[w, tree] == 0:
            state = S_ASLEEP
        body_awake[w, i] = state
        if state != S_ASLEEP:
            body_awake_ind[w, nb] = i
            nb += 1
        if i > 0:
            if body_awake[w, body_parentid[i]] != S_ASLEEP:
                parent_awake_ind[w, npar] = i
                npar += 1
    nbody_awake[w] = nb
    nparent_awake[w] = npar
    n = 0
    for i in range(nv):
        b = dof_bodyid[i]
        if body_treeid[b] >= 0 and body_awake[w, b] == S_AWAKE:
            dof_awake_ind[w, n] = i
            n += 1
    nv_awake[w] = n


@ti.kernel
def _update_sleep(
    staticawake: ti.i32, ntree: ti.i32, nbody: ti.i32, nv: ti.i32,
    # model
    body_treeid: ND, body_parentid: ND, body_rootid: ND, body_mocapid: ND, dof_bodyid: ND,
    # data
    tree_asleep: ND, tree_awake: ND, body_awake: ND, body_awake_ind: ND,
    parent_awake_ind: ND, dof_awake_ind: ND, ntree_awake: ND, nbody_awake: ND,
    nparent_awake: ND, nv_awake: ND,
):
    for w in range(tree_asleep.shape[0]):
        _update_world(w, staticawake, ntree, nbody, nv, body_treeid, body_parentid,
                      body_rootid, body_mocapid, dof_bodyid, tree_asleep, tree_awake,
                      body_awake, body_awake_ind, parent_awake_ind, dof_awake_ind,
                      ntree_awake, nbody_awake, nparent_awake, nv_awake)


def update_sleep(m, d, staticawake: bool = False) -> None:
    """mj_updateSleep (mj_updateSleepInit with ``staticawake``) in every world."""
    launch(_update_sleep, m, d, staticawake=int(staticawake))


# ---------------------------------------------------------------------------------------
# helpers: zero bits, can a tree sleep, sleep cycles, waking
# ---------------------------------------------------------------------------------------

@ti.func
def _zero_bits(x):
    """mju_isZeroByte of one number: +0.0 only (-0.0 is not zero bytes)."""
    zero = False
    if ti.static(config.precision() == "f64"):
        zero = ti.bit_cast(ti.cast(x, ti.f64), ti.u64) == ti.u64(0)
    else:
        zero = ti.bit_cast(ti.cast(x, ti.f32), ti.u32) == ti.u32(0)
    return zero


@ti.func
def _can_sleep(w, i, tol, qvel: ti.template(), tree_sleep_policy: ti.template(),
               tree_bodyadr: ti.template(), tree_bodynum: ti.template(),
               tree_dofadr: ti.template(), tree_dofnum: ti.template(),
               dof_length: ti.template(), xfrc_applied: ti.template(),
               qfrc_applied: ti.template()):
    """treeCanSleep: the policy allows it, no applied force on its bodies or dofs, and
    its velocity under ``tol`` (weighted infinity norm; exactly zero when tol is 0)."""
    ok = True
    policy = tree_sleep_policy[i]
    if policy == POLICY_NEVER or policy == POLICY_AUTO_NEVER:
        ok = False
    if ok:
        for b in range(tree_bodyadr[i], tree_bodyadr[i] + tree_bodynum[i]):
            for k in ti.static(range(6)):
                if not _zero_bits(xfrc_applied[w, b][k]):
                    ok = False
    adr = tree_dofadr[i]
    num = tree_dofnum[i]
    if ok:
        for j in range(adr, adr + num):
            if not _zero_bits(qfrc_applied[w, j]):
                ok = False
    if ok:
        if tol != 0.0:
            biggest = 0.0
            for j in range(adr, adr + num):
                biggest = ti.max(biggest, dof_length[j] * ti.abs(qvel[w, j]))
            ok = biggest < tol
        else:
            for j in range(adr, adr + num):
                if not _zero_bits(qvel[w, j]):
                    ok = False
    return ok


@ti.func
def _cycle_min(w, i, ntree, tree_asleep: ti.template()):
    """mj_sleepCycle: the smallest tree of the sleep cycle through tree i (-1: not a
    cycle)."""
    smallest = i
    current = i
    count = 0
    result = i
    while True:
        if count > ntree:
            result = -1
            break
        nxt = tree_asleep[w, current]
        if nxt < 0 or nxt >= ntree:
            result = -1
            break
        smallest = ti.min(smallest, nxt)
        current = nxt
        count += 1
        if current == i:
            result = smallest
            break
    return result


@ti.func
def _wake_tree(w, i, wakeval, ntree, tree_asleep: ti.template()):
    """mj_wakeTree: wake tree i and its sleep cycle with ``wakeval`` (an awake tree
    takes the smaller of its value and wakeval); returns how many trees woke."""
    nwoke = 0
    value = tree_asleep[w, i]
    if value < 0:
        tree_asleep[w, i] = ti.min(wakeval, value)
    else:
        current = i
        while True:
            nxt = tree_asleep[w, current]
            tree_asleep[w, current] = wakeval
            nwoke += 1
            current = nxt
            if current == i or nwoke >= ntree or current < 0 or current >= ntree:
                break
    return nwoke


# ---------------------------------------------------------------------------------------
# waking: after kinematics (user changes), tendons, contacts and equalities
# ---------------------------------------------------------------------------------------

@ti.kernel
def _save_poses(nbody: ti.i32, xpos: ND, xquat: ND, pose: ND):
    """Every body's xpos and xquat before kinematics: a sleeping body whose new pose
    differs was moved by the user (mj_kinematics1's check)."""
    for w, i in ti.ndrange(pose.shape[0], nbody):
        for k in ti.static(range(3)):
            pose[w, i, k] = xpos[w, i][k]
        for k in ti.static(range(4)):
            pose[w, i, 3 + k] = xquat[w, i][k]


@ti.kernel
def _wake_moved(
    ntree: ti.i32, nbody: ti.i32,
    # model
    body_jntnum: ND, body_treeid: ND, tree_sleep_policy: ND, tree_bodyadr: ND,
    tree_bodynum: ND, tree_dofadr: ND, tree_dofnum: ND, dof_length: ND,
    # data in
    xpos: ND, xquat: ND, qvel: ND, xfrc_applied: ND, qfrc_applied: ND, pose: ND,
    body_awake: ND,
    # data in/out
    tree_asleep: ND, tree_awake: ND,
):
    """mj_kinematics1's pose check of sleeping bodies with joints, then mj_wake (trees
    moved or pushed by the user, or no longer allowed to sleep)."""
    for w in range(tree_asleep.shape[0]):
        for i in range(1, nbody):
            if body_jntnum[i] > 0 and body_awake[w, i] == S_ASLEEP:
                same = True
                for k in ti.static(range(3)):
                    if xpos[w, i][k] != pose[w, i, k]:
                        same = False
                for k in ti.static(range(4)):
                    if xquat[w, i][k] != pose[w, i, 3 + k]:
                        same = False
                if not same:
                    tree_awake[w, body_treeid[i]] = 1
        for i in range(ntree):
            if tree_asleep[w, i] >= 0:
                if tree_awake[w, i] != 0 or not _can_sleep(
                        w, i, 0.0, qvel, tree_sleep_policy, tree_bodyadr, tree_bodynum,
                        tree_dofadr, tree_dofnum, dof_length, xfrc_applied, qfrc_applied):
                    _wake_tree(w, i, AWAKE, ntree, tree_asleep)


@ti.kernel
def _wake_all(ntree: ti.i32, ntree_awake: ND, tree_asleep: ND):
    """mj_wake with sleep disabled: a world with sleeping trees wakes them all."""
    for w in range(tree_asleep.shape[0]):
        if ntree_awake[w] < ntree:
            for i in range(ntree):
                tree_asleep[w, i] = AWAKE


def wake_all(m, d) -> None:
    """After the sleep flag was turned off: every tree of every world awake."""
    launch(_wake_all, m, d)
    update_sleep(m, d)


@ti.kernel
def _wake_tendons(
    ntree: ti.i32, ntendon: ti.i32,
    # model
    tendon_treenum: ND, tendon_treeid: ND, tendon_limited: ND, tendon_range: ND,
    tendon_margin: ND,
    # data in
    ten_length: ND, tree_awake: ND,
    # data in/out
    tree_asleep: ND,
):
    """mj_wakeTendon: a limited tendon at its limit between an awake and a sleeping
    tree wakes the sleeping one."""
    for w in range(tree_asleep.shape[0]):
        for i in range(ntendon):
            if tendon_treenum[i] == 2 and tendon_limited[i] != 0:
                rng = tendon_range[param_row(w, tendon_range), i]
                lower, upper = limit_sides(rng[0], rng[1], ten_length[w, i],
                                           tendon_margin[param_row(w, tendon_margin), i])
                if lower + upper > 0:
                    t1 = tendon_treeid[i][0]
                    t2 = tendon_treeid[i][1]
                    a1 = tree_awake[w, t1]
                    a2 = tree_awake[w, t2]
                    if a1 != a2:
                        sleeping = t2 if a1 != 0 else t1
                        wakeval = tree_asleep[w, t1] if a1 != 0 else tree_asleep[w, t2]
                        _wake_tree(w, sleeping, wakeval, ntree, tree_asleep)


@ti.kernel
def _wake_contacts(
    ntree: ti.i32,
    # model
    body_treeid: ND, geom_bodyid: ND,
    # data in
    ncon: ND, contact_geom: ND, tree_awake: ND,
    # data in/out
    tree_asleep: ND,
):
    """mj_wakeCollision: a contact between geoms of an awake and a sleeping tree wakes
    the sleeping tree (and its cycle) with the awake tree's counter, in contact order."""
    for w in range(tree_asleep.shape[0]):
        for c in range(ti.min(ncon[w], contact_geom.shape[1])):
            g1 = contact_geom[w, c][0]
            g2 = contact_geom[w, c][1]
            if g1 >= 0 and g2 >= 0:
                t1 = body_treeid[geom_bodyid[g1]]
                t2 = body_treeid[geom_bodyid[g2]]
                if t1 >= 0 and t2 >= 0:
                    a1 = tree_awake[w, t1]
                    a2 = tree_awake[w, t2]
                    if (a1 != 0) != (a2 != 0):
                        sleeping = t2 if a1 != 0 else t1
                        wakeval = tree_asleep[w, t1] if a1 != 0 else tree_asleep[w, t2]
                        _wake_tree(w, sleeping, wakeval, ntree, tree_asleep)


@ti.kernel
def _drop_asleep_contacts(
    geom_bodyid: ND, body_awake: ND, ncon: ND, contact_dist: ND, contact_pos: ND,
    contact_frame: ND, contact_includemargin: ND, contact_friction: ND,
    contact_solref: ND, contact_solreffriction: ND, contact_solimp: ND, contact_mu: ND,
    contact_dim: ND, contact_geom: ND, contact_flex: ND, contact_elem: ND,
    contact_vert: ND, contact_exclude: ND, contact_efc_address: ND, contact_key: ND,
):
    """Contacts between geoms whose bodies are both asleep or static go (MuJoCo's
    broadphase and explicit-pair filters leave such pairs out), the others keep their
    order; one thread per world."""
    for w in range(ncon.shape[0]):
        n = ti.min(ncon[w], contact_dist.shape[1])
        kept = 0
        for c in range(n):
            g1 = contact_geom[w, c][0]
            g2 = contact_geom[w, c][1]
            drop = False
            if g1 >= 0 and g2 >= 0:
                drop = body_awake[w, geom_bodyid[g1]] != S_AWAKE and \
                    body_awake[w, geom_bodyid[g2]] != S_AWAKE
            if not drop:
                if kept != c:
                    contact_dist[w, kept] = contact_dist[w, c]
                    contact_pos[w, kept] = contact_pos[w, c]
                    contact_frame[w, kept] = contact_frame[w, c]
                    contact_includemargin[w, kept] = contact_includemargin[w, c]
                    contact_friction[w, kept] = contact_friction[w, c]
                    contact_solref[w, kept] = contact_solref[w, c]
                    contact_solreffriction[w, kept] = contact_solreffriction[w, c]
                    contact_solimp[w, kept] = contact_solimp[w, c]
                    contact_mu[w, kept] = contact_mu[w, c]
                    contact_dim[w, kept] = contact_dim[w, c]
                    contact_geom[w, kept] = contact_geom[w, c]
                    contact_flex[w, kept] = contact_flex[w, c]
                    contact_elem[w, kept] = contact_elem[w, c]
                    contact_vert[w, kept] = contact_vert[w, c]
                    contact_exclude[w, kept] = contact_exclude[w, c]
                    contact_efc_address[w, kept] = contact_efc_address[w, c]
                    contact_key[w, kept] = contact_key[w, c]
                kept += 1
        ncon[w] = kept


@ti.kernel
def _wake_equalities(
    ntree: ti.i32, neq: ti.i32,
    # model
    body_treeid: ND, eq_type: ND, eq_obj1id: ND, eq_obj2id: ND, eq_objtype: ND,
    site_bodyid: ND, jnt_bodyid: ND,
    # data in
    eq_active: ND, tree_awake: ND,
    # data in/out
    tree_asleep: ND,
):
    """mj_wakeEquality: an active connect, weld or joint equality between a sleeping
    tree and an awake one wakes the sleeping tree; between two sleeping trees of
    different sleep cycles, both (tendon and flex equalities are refused with sleep on
    the host, as MuJoCo stops with an error on them)."""
    for w in range(tree_asleep.shape[0]):
        for i in range(neq):
            etype = eq_type[i]
            if eq_active[w, i] != 0 and (etype == EQ_CONNECT or etype == EQ_WELD or
                                         etype == EQ_JOINT):
                id1 = eq_obj1id[i]
                id2 = eq_obj2id[i]
                t1 = -1
                t2 = -1
                if etype == EQ_JOINT:
                    if id1 >= 0:
                        t1 = body_treeid[jnt_bodyid[id1]]
                    if id2 >= 0:
                        t2 = body_treeid[jnt_bodyid[id2]]
                else:
                    b1, b2 = eq_bodies(i, eq_obj1id, eq_obj2id, eq_objtype, site_bodyid)
                    t1 = body_treeid[b1]
                    t2 = body_treeid[b2]
                s1 = S_STATIC
                s2 = S_STATIC
                if t1 >= 0:
                    s1 = tree_awake[w, t1]
                if t2 >= 0:
                    s2 = tree_awake[w, t2]
                if (s1 == S_ASLEEP or s2 == S_ASLEEP) and s1 != S_STATIC and \
                        s2 != S_STATIC and t1 != t2:
                    if s1 == S_ASLEEP and s2 == S_ASLEEP:
                        c1 = _cycle_min(w, t1, ntree, tree_asleep)
                        c2 = _cycle_min(w, t2, ntree, tree_asleep)
                        if c1 != c2:
                            _wake_tree(w, t1, AWAKE, ntree, tree_asleep)
                            _wake_tree(w, t2, AWAKE, ntree, tree_asleep)
                    else:
                        sleeping = t1 if s1 == S_ASLEEP else t2
                        _wake_tree(w, sleeping, AWAKE, ntree, tree_asleep)


# ---------------------------------------------------------------------------------------
# mj_sleep: counters, islands and free trees fall asleep
# ---------------------------------------------------------------------------------------

@ti.kernel
def _sleep(
    ntree: ti.i32, tol: float,
    # model
    tree_sleep_policy: ND, tree_bodyadr: ND, tree_bodynum: ND, tree_dofadr: ND,
    tree_dofnum: ND, dof_length: ND,
    # data in
    nefc: ND, nisland: ND, island_itreeadr: ND, island_ntree: ND, map_itree2tree: ND,
    xfrc_applied: ND, qfrc_applied: ND,
    # data in/out
    tree_asleep: ND, qvel: ND, qacc: ND,
    # out: trees put to sleep in each world
    slept: ND,
):
    """mj_sleep: each awake tree's counter counts up while it can sleep (reset when it
    cannot); an island whose trees all reached -1 falls asleep as one cycle, and so
    does each unconstrained tree at -1 on its own; a world with rows but no islands
    (island flag off) sleeps nothing. Sleeping trees get qvel = qacc = 0."""
    for w in range(tree_asleep.shape[0]):
        count = 0
        ni = nisland[w]
        if not (nefc[w] > 0 and ni == 0):
            for i in range(ntree):
                if tree_asleep[w, i] < 0:
                    if _can_sleep(w, i, tol, qvel, tree_sleep_policy, tree_bodyadr,
                                  tree_bodynum, tree_dofadr, tree_dofnum, dof_length,
                                  xfrc_applied, qfrc_applied):
                        if tree_asleep[w, i] < -1:
                            tree_asleep[w, i] += 1
                    else:
                        tree_asleep[w, i] = AWAKE
            for k in range(ni):
                start = island_itreeadr[w, k]
                n = island_ntree[w, k]
                ready = True
                for j in range(start, start + n):
                    if tree_asleep[w, map_itree2tree[w, j]] < -1:
                        ready = False
                if ready:
                    for j in range(start, start + n):
                        tree = map_itree2tree[w, j]
                        nxt = map_itree2tree[w, start + (j - start + 1) % n]
                        tree_asleep[w, tree] = nxt
                        _zero_tree(w, tree, tree_dofadr, tree_dofnum, qvel, qacc)
                    count += n
            start = 0
            if ni > 0:
                start = island_itreeadr[w, ni - 1] + island_ntree[w, ni - 1]
            for j in range(start, ntree):
                tree = j
                if ni > 0:
                    tree = map_itree2tree[w, j]
                if tree_asleep[w, tree] == -1:
                    tree_asleep[w, tree] = tree
                    _zero_tree(w, tree, tree_dofadr, tree_dofnum, qvel, qacc)
                    count += 1
        slept[w] = count


@ti.func
def _zero_tree(w, tree, tree_dofadr: ti.template(), tree_dofnum: ti.template(),
               qvel: ti.template(), qacc: ti.template()):
    for j in range(tree_dofadr[tree], tree_dofadr[tree] + tree_dofnum[tree]):
        qvel[w, j] = 0.0
        qacc[w, j] = 0.0


# ---------------------------------------------------------------------------------------
# sleep states of objects (mj_sleepState), for the row and sensor filters
# ---------------------------------------------------------------------------------------

@ti.func
def tendon_state(w, i, tendon_treenum: ti.template(), tendon_treeid: ti.template(),
                 tree_awake: ti.template()):
    """mj_tendonSleepState: STATIC without trees, else AWAKE when one of its first two
    trees is (more than two trees: AWAKE)."""
    state = S_AWAKE
    n = tendon_treenum[i]
    if n == 0:
        state = S_STATIC
    elif n <= 2:
        awake = tree_awake[w, tendon_treeid[i][0]]
        if n == 2:
            awake = awake | tree_awake[w, tendon_treeid[i][1]]
        state = S_AWAKE if awake != 0 else S_ASLEEP
    return state


@ti.func
def object_state(w, objtype, objid, body_awake: ti.template(), jnt_bodyid: ti.template(),
                 dof_bodyid: ti.template(), geom_bodyid: ti.template(),
                 site_bodyid: ti.template(), cam_bodyid: ti.template(),
                 light_bodyid: ti.template(), tendon_treenum: ti.template(),
                 tendon_treeid: ti.template(), tree_awake: ti.template(),
                 actuator_trntype: ti.template(), actuator_trnid: ti.template()):
    """mj_sleepState of a body-attached object, a tendon or an actuator (anything else:
    AWAKE, as MuJoCo's flex and unknown objects)."""
    state = S_AWAKE
    if objtype == OBJ_BODY or objtype == OBJ_XBODY:
        state = body_awake[w, objid]
    elif objtype == OBJ_JOINT:
        state = body_awake[w, jnt_bodyid[objid]]
    elif objtype == OBJ_DOF:
        state = body_awake[w, dof_bodyid[objid]]
    elif objtype == OBJ_GEOM:
        state = body_awake[w, geom_bodyid[objid]]
    elif objtype == OBJ_SITE:
        state = body_awake[w, site_bodyid[objid]]
    elif objtype == OBJ_CAMERA:
        state = body_awake[w, cam_bodyid[objid]]
    elif objtype == OBJ_LIGHT:
        state = body_awake[w, light_bodyid[objid]]
    elif objtype == OBJ_TENDON:
        state = tendon_state(w, objid, tendon_treenum, tendon_treeid, tree_awake)
    elif objtype == OBJ_ACTUATOR:
        trn = actuator_trntype[objid]
        tid = actuator_trnid[objid][0]
        if trn == TRN_JOINT or trn == TRN_JOINTINPARENT:
            state = body_awake[w, jnt_bodyid[tid]]
        elif trn == TRN_SLIDERCRANK:
            s1 = body_awake[w, site_bodyid[tid]]
            s2 = body_awake[w, site_bodyid[actuator_trnid[objid][1]]]
            state = S_AWAKE if (s1 == S_AWAKE or s2 == S_AWAKE) else S_ASLEEP
        elif trn == TRN_TENDON:
            state = tendon_state(w, tid, tendon_treenum, tendon_treeid, tree_awake)
        elif trn == TRN_SITE:
            state = body_awake[w, site_bodyid[tid]]
        elif trn == TRN_BODY:
            state = body_awake[w, tid]
    return state


@ti.func
def equality_asleep(w, i, eq_type: ti.template(), eq_objtype: ti.template(),
                    eq_obj1id: ti.template(), eq_obj2id: ti.template(),
                    body_awake: ti.template(), jnt_bodyid: ti.template(),
                    site_bodyid: ti.template(), tendon_treenum: ti.template(),
                    tendon_treeid: ti.template(), tree_awake: ti.template()):
    """mj_equalitySleepState == ASLEEP: neither object awake (a missing object counts
    as static; flex equalities are always awake)."""
    etype = eq_type[i]
    asleep = False
    if etype == EQ_CONNECT or etype == EQ_WELD or etype == EQ_JOINT or \
            etype == EQ_TENDON:
        s = ti.Vector([S_STATIC, S_STATIC])
        for k in ti.static(range(2)):
            objid = eq_obj1id[i] if k == 0 else eq_obj2id[i]
            if objid >= 0:
                if etype == EQ_JOINT:
                    s[k] = body_awake[w, jnt_bodyid[objid]]
                elif etype == EQ_TENDON:
                    s[k] = tendon_state(w, objid, tendon_treenum, tendon_treeid,
                                        tree_awake)
                elif eq_objtype[i] == OBJ_SITE:
                    s[k] = body_awake[w, site_bodyid[objid]]
                else:
                    s[k] = body_awake[w, objid]
        asleep = s[0] != S_AWAKE and s[1] != S_AWAKE
    return asleep


@ti.func
def sensor_asleep(w, i, sensor_type: ti.template(), sensor_objtype: ti.template(),
                  sensor_objid: ti.template(), sensor_reftype: ti.template(),
                  sensor_refid: ti.template(), body_awake: ti.template(),
                  jnt_bodyid: ti.template(), dof_bodyid: ti.template(),
                  geom_bodyid: ti.template(), site_bodyid: ti.template(),
                  cam_bodyid: ti.template(), light_bodyid: ti.template(),
                  tendon_treenum: ti.template(), tendon_treeid: ti.template(),
                  tree_awake: ti.template(), actuator_trntype: ti.template(),
                  actuator_trnid: ti.template()):
    """mj_sensorSleepState == ASLEEP: user, plugin and rangefinder sensors and contact
    sensors over a site volume never sleep; otherwise asleep when neither the object
    nor the reference is awake (an unknown one takes the other's state)."""
    stype = sensor_type[i]
    objtype = sensor_objtype[i]
    reftype = sensor_reftype[i]
    asleep = False
    always = stype == SENS_USER or stype == SENS_PLUGIN or stype == SENS_RANGEFINDER or (
        stype == SENS_CONTACT and (objtype == OBJ_SITE or reftype == OBJ_SITE))
    if not always and not (objtype == OBJ_UNKNOWN and reftype == OBJ_UNKNOWN):
        s_obj = S_AWAKE
        s_ref = S_AWAKE
        if objtype != OBJ_UNKNOWN:
            s_obj = object_state(w, objtype, sensor_objid[i], body_awake, jnt_bodyid,
                                 dof_bodyid, geom_bodyid, site_bodyid, cam_bodyid,
                                 light_bodyid, tendon_treenum, tendon_treeid, tree_awake,
                                 actuator_trntype, actuator_trnid)
        if reftype != OBJ_UNKNOWN:
            s_ref = object_state(w, reftype, sensor_refid[i], body_awake, jnt_bodyid,
                                 dof_bodyid, geom_bodyid, site_bodyid, cam_bodyid,
                                 light_bodyid, tendon_treenum, tendon_treeid, tree_awake,
                                 actuator_trntype, actuator_trnid)
        if objtype == OBJ_UNKNOWN:
            asleep = s_ref == S_ASLEEP
        elif reftype == OBJ_UNKNOWN:
            asleep = s_obj == S_ASLEEP
        else:
            asleep = s_obj != S_AWAKE and s_ref != S_AWAKE
    return asleep


@ti.kernel
def _keep_sensors(
    nsensor: ti.i32, nbody: ti.i32,
    # model
    sensor_type: ND, sensor_objtype: ND, sensor_objid: ND, sensor_reftype: ND,
    sensor_refid: ND, sensor_adr: ND, sensor_dim: ND, jnt_bodyid: ND, dof_bodyid: ND,
    geom_bodyid: ND, site_bodyid: ND, cam_bodyid: ND, light_bodyid: ND,
    tendon_treenum: ND, tendon_treeid: ND, actuator_trntype: ND, actuator_trnid: ND,
    # data in
    body_awake: ND, tree_awake: ND, nbody_awake: ND, saved: ND,
    # data in/out
    sensordata: ND,
):
    """Sleeping sensors keep the value they had before this forward pass (MuJoCo's
    sensor stages skip them), in worlds where some body sleeps."""
    for w, i in ti.ndrange(sensordata.shape[0], nsensor):
        if nbody_awake[w] < nbody:
            if sensor_asleep(w, i, sensor_type, sensor_objtype, sensor_objid,
                             sensor_reftype, sensor_refid, body_awake, jnt_bodyid,
                             dof_bodyid, geom_bodyid, site_bodyid, cam_bodyid,
                             light_bodyid, tendon_treenum, tendon_treeid, tree_awake,
                             actuator_trntype, actuator_trnid):
                adr = sensor_adr[i]
                for k in range(sensor_dim[i]):
                    sensordata[w, adr + k] = saved[w, adr + k]


@ti.kernel
def _asleep_rows(
    ntree: ti.i32, neq: ti.i32, nv: ti.i32, njnt: ti.i32,
    # model
    eq_type: ND, eq_objtype: ND, eq_obj1id: ND, eq_obj2id: ND, dof_bodyid: ND,
    jnt_bodyid: ND, site_bodyid: ND, tendon_treenum: ND, tendon_treeid: ND,
    # data in
    tree_awake: ND, body_awake: ND, ntree_awake: ND,
    # out: per world, 1 for each equality, dof and joint (in that order) that sleeps
    asleep: ND,
):
    """Which equalities, dofs (friction loss) and joints (limits) make no constraint
    rows in a world where some tree sleeps (MuJoCo's filters in mj_instantiateEquality,
    mj_instantiateFriction and mj_instantiateLimit)."""
    for w, k in ti.ndrange(asleep.shape[0], neq + nv + njnt):
        flag = 0
        if ntree_awake[w] < ntree:
            if k < neq:
                if equality_asleep(w, k, eq_type, eq_objtype, eq_obj1id, eq_obj2id,
                                   body_awake, jnt_bodyid, site_bodyid, tendon_treenum,
                                   tendon_treeid, tree_awake):
                    flag = 1
            elif k < neq + nv:
                flag = 1 if body_awake[w, dof_bodyid[k - neq]] == S_ASLEEP else 0
            else:
                flag = 1 if body_awake[w, jnt_bodyid[k - neq - nv]] == S_ASLEEP else 0
        asleep[w, k] = flag


def asleep_rows(m, d):
    """The (nworld, neq + nv + njnt) flags of _asleep_rows, for make_constraint."""
    s = scratch(m, d)
    launch(_asleep_rows, m, d, asleep=s.row_asleep)
    return s.row_asleep


@ti.kernel
def _asleep_actuators(
    nu: ti.i32,
    # model
    jnt_bodyid: ND, dof_bodyid: ND, geom_bodyid: ND, site_bodyid: ND, cam_bodyid: ND,
    light_bodyid: ND, tendon_treenum: ND, tendon_treeid: ND, actuator_trntype: ND,
    actuator_trnid: ND,
    # data in
    body_awake: ND, tree_awake: ND,
    # out: 1 for each actuator that sleeps
    asleep: ND,
):
    """mj_sleepState(mjOBJ_ACTUATOR) == ASLEEP of every actuator, per world."""
    for w, i in ti.ndrange(asleep.shape[0], nu):
        state = object_state(w, OBJ_ACTUATOR, i, body_awake, jnt_bodyid, dof_bodyid,
                             geom_bodyid, site_bodyid, cam_bodyid, light_bodyid,
                             tendon_treenum, tendon_treeid, tree_awake, actuator_trntype,
                             actuator_trnid)
        asleep[w, i] = 1 if state == S_ASLEEP else 0


def asleep_actuators(m, d):
    """The (nworld, nu) flags of _asleep_actuators, for actuation."""
    s = scratch(m, d)
    launch(_asleep_actuators, m, d, asleep=s.act_asleep)
    return s.act_asleep


@ti.kernel
def _select_rows(mask: ND, when_set: ND, otherwise: ND, out: ND):
    """out[w] = when_set[w] where mask[w] != 0, else otherwise[w] (2-d arrays)."""
    for w, i in ti.ndrange(out.shape[0], out.shape[1]):
        out[w, i] = when_set[w, i] if mask[w] != 0 else otherwise[w, i]


# ---------------------------------------------------------------------------------------
# host side: the launches, their scratch
# ---------------------------------------------------------------------------------------

def active(m) -> bool:
    """Whether a tree can fall asleep: the sleep flag on and some tree's policy allows
    it (automatic or the user's "allowed" / "init"). Otherwise MuJoCo's sleep functions
    keep every tree awake and change nothing, and tiphys runs the stages as with the
    flag off (a robot whose actuated trees never sleep pays nothing for the flag)."""
    return per_options(m, "sleep_active", _active)


def _active(m) -> bool:
    if not m.opt.enabled("sleep") or not m.ntree:
        return False
    policy = np.asarray(m.arrays.tree_sleep_policy).reshape(-1)[:m.ntree]
    return bool(np.isin(policy, (POLICY_AUTO_ALLOWED, POLICY_ALLOWED, POLICY_INIT)).any())


def scratch(m, d):
    """This Data's sleep work arrays (made once): poses before kinematics, per-world
    flags, saved sensor values and activations, the integrator's acceleration."""
    s = d.scratch.sleep
    if s is None:
        tag = d.scratch.tag
        fdt = config.float_dtype()
        nw = d.nworld
        s = d.scratch.sleep = SimpleNamespace(
            pose=tag(ti.ndarray(fdt, shape=(nw, max(1, m.nbody), 7))),
            slept=tag(ti.ndarray(ti.i32, shape=(nw,))),
            sensordata=tag(ti.ndarray(fdt, shape=tuple(d.sensordata.shape))),
            act_pre=tag(ti.ndarray(fdt, shape=tuple(d.act.shape))),
            act_new=tag(ti.ndarray(fdt, shape=tuple(d.act.shape))),
            qacc_int=tag(ti.ndarray(fdt, shape=tuple(d.qvel.shape))),
            row_asleep=tag(ti.ndarray(ti.i32, shape=(nw, max(1, m.neq + m.nv + m.njnt)))),
            act_asleep=tag(ti.ndarray(ti.i32, shape=(nw, max(1, m.nu)))))
    return s


def save_poses(m, d) -> None:
    """Before kinematics: every body's pose, for wake_moved."""
    launch(_save_poses, m, d, pose=scratch(m, d).pose)


def wake_moved(m, d) -> None:
    """After kinematics: trees the user moved or pushed wake (mj_wake), then the awake
    arrays are brought up to date (mj_updateSleep: also after an autoreset)."""
    launch(_wake_moved, m, d, pose=scratch(m, d).pose)
    update_sleep(m, d)


def wake_tendons(m, d) -> None:
    """After the tendons (mj_wakeTendon), then mj_updateSleep (in every world: where no
    tree woke it changes nothing)."""
    if m.ntendon:
        launch(_wake_tendons, m, d)
        update_sleep(m, d)


def wake_contacts(m, d) -> None:
    """After collision, which made the contacts of every candidate pair: mj_wakeCollision
    on the contacts MuJoCo's first pass makes (those with an awake body: the others
    wake nothing), then the contacts its second pass would not make go (both bodies
    asleep or static, with the trees woken counted awake). The same contacts as
    MuJoCo's two collision passes, in one."""
    launch(_wake_contacts, m, d)
    update_sleep(m, d)
    launch(_drop_asleep_contacts, m, d)


def wake_equalities(m, d) -> None:
    """After collision (mj_wakeEquality), then mj_updateSleep."""
    if m.neq:
        launch(_wake_equalities, m, d)
        update_sleep(m, d)


def sleep(m, d):
    """mj_sleep in every world; returns the (nworld,) count of trees put to sleep."""
    s = scratch(m, d)
    launch(_sleep, m, d, tol=float(m.opt.sleep_tolerance), slept=s.slept)
    return s.slept


def save_sensors(m, d) -> None:
    """Before a pass of the sensor stages: the values sleeping sensors keep."""
    if m.nsensordata:
        copy_rows(m, d, d.sensordata, scratch(m, d).sensordata)


def keep_sensors(m, d) -> None:
    """After a pass of the sensor stages: sleeping sensors get their saved values back."""
    if m.nsensordata:
        launch(_keep_sensors, m, d, saved=scratch(m, d).sensordata)


def select_rows(m, d, mask, when_set, otherwise, out) -> None:
    """out = when_set in the worlds where mask is set, otherwise elsewhere (2-d
    arrays of this Data)."""
    launch(_select_rows, m, d, mask=mask, when_set=when_set, otherwise=otherwise, out=out)


@ti.kernel
def _copy_rows(src: ND, dst: ND):
    for w, i in ti.ndrange(dst.shape[0], dst.shape[1]):
        dst[w, i] = src[w, i]


def copy_rows(m, d, src, dst) -> None:
    """dst = src (2-d arrays of this Data; a launch, so that replays repeat it)."""
    launch(_copy_rows, m, d, src=src, dst=dst)
