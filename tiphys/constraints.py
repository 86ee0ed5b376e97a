"""Host side of the constraint stage: row budgets (``njmax``) per world."""
import numpy as np

from .kernels.consts import EQ_FLEX, JNT_BALL, WRAP_CYLINDER, WRAP_JOINT, WRAP_SITE, WRAP_SPHERE

# rows per equality type (mjtEq: connect, weld, joint, tendon); flex rows are per edge
EQ_ROWS = (3, 6, 1, 1)


def _rows_per_contact(condim: int) -> int:
    """Most rows one contact of this condim can take (pyramidal 2(dim-1) >= elliptic
    dim, frictionless 1)."""
    return 1 if condim <= 1 else 2 * (condim - 1)


def default_njmax(m, nconmax: int) -> int:
    """Constraint rows per world: every equality, friction-loss and limit row the model
    can produce, plus the rows of ``nconmax`` contacts at the model's largest condim."""
    a = m.arrays
    rows = 0
    eq_type = getattr(a, "eq_type", None)
    if m.neq and eq_type is not None:
        eq_obj = np.asarray(a.eq_obj1id).reshape(-1)
        for i, t in enumerate(np.asarray(eq_type)[:m.neq]):
            rows += EQ_ROWS[int(t)] if int(t) < len(EQ_ROWS) else 0
            if int(t) == EQ_FLEX:  # a row per non-rigid edge
                f = int(eq_obj[i])
                adr = int(np.asarray(a.flex_edgeadr)[f])
                num = int(np.asarray(a.flex_edgenum)[f])
                rows += int(np.count_nonzero(np.asarray(a.flexedge_rigid)[adr:adr + num] == 0))
    if m.nv:
        rows += int(np.count_nonzero(np.any(
            m.param("dof_frictionloss").reshape(-1, m.nv) != 0, axis=0)))
    if m.ntendon:
        rows += int(np.count_nonzero(np.any(
            m.param("tendon_frictionloss").reshape(-1, m.ntendon) > 0, axis=0)))
        rows += 2 * int(np.count_nonzero(np.asarray(a.tendon_limited)[:m.ntendon]))
    if m.njnt:
        limited = np.asarray(a.jnt_limited)[:m.njnt] != 0
        ball = np.asarray(a.jnt_type)[:m.njnt] == JNT_BALL
        rows += int(np.count_nonzero(limited & ball)) + 2 * int(
            np.count_nonzero(limited & ~ball))
    condim = 1
    if m.ngeom:
        condim = max(condim, int(np.max(np.asarray(a.geom_condim)[:m.ngeom])))
    if m.npair:
        condim = max(condim, int(np.max(np.asarray(a.pair_dim)[:m.npair])))
    if m.nflex:  # flex contacts (kernels/collide_flex.py)
        condim = max(condim, int(np.max(np.asarray(a.flex_condim)[:m.nflex])))
    return int(rows + int(nconmax) * _rows_per_contact(condim))


def _chain_lengths(m) -> np.ndarray:
    """Per body: the dofs on its kinematic chain (its own and its ancestors')."""
    a = m.arrays
    parent = np.asarray(a.body_parentid)[:m.nbody]
    dofnum = np.asarray(a.body_dofnum)[:m.nbody]
    out = np.zeros(m.nbody, dtype=np.int64)
    for b in range(1, m.nbody):  # parents come before children
        out[b] = out[parent[b]] + dofnum[b]
    return out


def _tendon_widths(m, chain: np.ndarray) -> np.ndarray:
    """Per tendon: an upper bound on its sparse Jacobian's columns (joints of a fixed
    tendon; the chains of every body its path can touch)."""
    a = m.arrays
    out = np.zeros(m.ntendon, dtype=np.int64)
    wtype = np.asarray(a.wrap_type)[:m.nwrap]
    objid = np.asarray(a.wrap_objid)[:m.nwrap]
    site_body = np.asarray(a.site_bodyid)[:m.nsite]
    geom_body = np.asarray(a.geom_bodyid)[:m.ngeom]
    for t in range(m.ntendon):
        adr, num = int(a.tendon_adr[t]), int(a.tendon_num[t])
        kinds, ids = wtype[adr:adr + num], objid[adr:adr + num]
        if num and kinds[0] == WRAP_JOINT:
            out[t] = len(set(ids.tolist()))
            continue
        bodies = [site_body[i] for k, i in zip(kinds, ids) if k == WRAP_SITE]
        bodies += [geom_body[i] for k, i in zip(kinds, ids)
                   if k in (WRAP_SPHERE, WRAP_CYLINDER)]
        out[t] = int(sum(chain[b] for b in set(bodies)))
    return out


def default_njnnz(m, njmax: int) -> int:
    """Sparse-Jacobian non-zeros per world: ``njmax`` rows of the widest row the model
    can make (two bodies' chains for contacts and connect/weld, a tendon's columns, two
    tendons' for a tendon equality; at most nv)."""
    chain = _chain_lengths(m)
    top = np.sort(chain)[-2:] if m.nbody else np.zeros(1)
    width = max(3, int(top.sum()))
    if m.nflex:  # flex element contacts: the chains of an element's vertex bodies
        a = m.arrays
        per_flex = [0]
        vertbody = np.asarray(a.flex_vertbodyid)
        for f in range(m.nflex):
            if int(np.asarray(a.flex_contype)[f]) or int(np.asarray(a.flex_conaffinity)[f]):
                adr, num = int(a.flex_vertadr[f]), int(a.flex_vertnum[f])
                longest = int(chain[vertbody[adr:adr + num]].max()) if num else 0
                per_flex.append((int(a.flex_dim[f]) + 1) * longest)
        elem = max(per_flex)
        width = max(width, int(top.max(initial=0)) + elem, 2 * elem)
    if m.ntendon:
        ten = np.sort(_tendon_widths(m, chain))[-2:]
        width = max(width, int(ten.sum()))
    return int(njmax) * max(1, min(width, m.nv))
