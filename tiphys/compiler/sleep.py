"""tree_sleep_policy, as MuJoCo 3.4.0 compiles it: each tree starts AUTO; a movable
root body's <body sleep> sets its tree's policy (mjCModel::CopyTree); then setFixed's
automatic choice: trees moved by an actuator (through a joint, site, body or tendon),
trees joined by a tendon that spans more than two trees or two with stiffness or
damping, and trees holding flex bodies never sleep (AUTO_NEVER), and the other AUTO
trees may (AUTO_ALLOWED). A tree the user allowed to sleep on such a tendon is an
error, as in MuJoCo.

The engine reads the policy when <flag sleep="enable"/> is on (kernels/sleep.py);
MuJoCo ignores it while the flag is off."""
from __future__ import annotations

import numpy as np

from ..errors import ModelError, error_at
from ..kernels.consts import (TRN_BODY, TRN_JOINT, TRN_JOINTINPARENT, TRN_SITE,
                              TRN_SLIDERCRANK, TRN_TENDON, WRAP_CYLINDER, WRAP_JOINT,
                              WRAP_SITE, WRAP_SPHERE)
from .tree import SLEEP_AUTO, SLEEP_POLICY

AUTO_NEVER, AUTO_ALLOWED = 1, 2
_ALLOWED, _INIT = SLEEP_POLICY["allowed"], SLEEP_POLICY["init"]


def _flat(a) -> list:
    return [int(x) for x in np.asarray(a).reshape(-1)]


def fill_sleep_policy(builder, out) -> None:
    treeid = _flat(out.body_treeid)
    ntree = int(out.__dict__.get("_size_ntree", 0))
    policy = [SLEEP_AUTO] * ntree
    for i, b in enumerate(builder.bodies):
        if i == 0 or b.sleep == SLEEP_AUTO:
            continue
        if treeid[i] == -1 or treeid[i] == treeid[i - 1]:
            raise error_at(b.el, "sleep policy only allowed for movable root bodies", "sleep")
        policy[treeid[i]] = b.sleep

    jnt_body, site_body, geom_body = (_flat(out.jnt_bodyid), _flat(out.site_bodyid),
                                      _flat(out.geom_bodyid))
    wrap_type, wrap_obj = _flat(out.wrap_type), _flat(out.wrap_objid)
    tendon_adr, tendon_num = _flat(out.tendon_adr), _flat(out.tendon_num)

    def wrap_tree(k: int) -> int:
        kind, obj = wrap_type[k], wrap_obj[k]
        body = (jnt_body[obj] if kind == WRAP_JOINT else site_body[obj] if kind == WRAP_SITE
                else geom_body[obj] if kind in (WRAP_SPHERE, WRAP_CYLINDER) else -1)
        return treeid[body] if body != -1 else -1

    def never(tree: int) -> None:
        if tree != -1 and policy[tree] == SLEEP_AUTO:
            policy[tree] = AUTO_NEVER

    trntype, trnid = _flat(out.actuator_trntype), _flat(out.actuator_trnid)
    for i, kind in enumerate(trntype):
        tid = trnid[2 * i]
        if kind in (TRN_JOINT, TRN_JOINTINPARENT):
            never(treeid[jnt_body[tid]])
        elif kind in (TRN_SITE, TRN_SLIDERCRANK):
            never(treeid[site_body[tid]])
        elif kind == TRN_BODY:
            never(treeid[tid])
        elif kind == TRN_TENDON:
            for k in range(tendon_adr[tid], tendon_adr[tid] + tendon_num[tid]):
                never(wrap_tree(k))

    treenum = _flat(out.tendon_treenum)
    stiffness = np.asarray(out.tendon_stiffness, dtype=float).reshape(-1)
    damping = np.asarray(out.tendon_damping, dtype=float).reshape(-1)
    for i, n in enumerate(treenum):
        if n < 2 or (n == 2 and stiffness[i] == 0 and damping[i] == 0):
            continue
        seen = set()
        for k in range(tendon_adr[i], tendon_adr[i] + tendon_num[i]):
            tree = wrap_tree(k)
            if tree == -1 or tree in seen:
                continue
            seen.add(tree)
            if policy[tree] == SLEEP_AUTO:
                policy[tree] = AUTO_NEVER
            elif policy[tree] in (_ALLOWED, _INIT):
                why = ("which spans more than 2 trees" if n > 2 else
                       "with non-zero stiffness or damping")
                message = f"tree {tree} connected to tendon {i} {why}, sleeping not allowed"
                els = getattr(out, "tendon_els", None)
                if els is not None and i < len(els) and els[i] is not None:
                    raise error_at(els[i], message)
                raise ModelError(message)

    if int(out.__dict__.get("_size_nflex", 0)):
        interp = _flat(out.flex_interp)
        nodes = (_flat(out.flex_nodeadr), _flat(out.flex_nodenum), _flat(out.flex_nodebodyid))
        verts = (_flat(out.flex_vertadr), _flat(out.flex_vertnum), _flat(out.flex_vertbodyid))
        for f in range(len(interp)):
            adr, num, bodies = nodes if interp[f] else verts
            for b in bodies[adr[f]:adr[f] + num[f]]:
                never(treeid[b])

    out.tree_sleep_policy = np.array([AUTO_ALLOWED if p == SLEEP_AUTO else p for p in policy],
                                     dtype=np.int32)
