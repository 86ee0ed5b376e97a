"""Host side of the constraint stage: row budgets (``njmax``) per world."""
import numpy as np

from .kernels.consts import JNT_BALL

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
        for t in np.asarray(eq_type)[:m.neq]:
            rows += EQ_ROWS[int(t)] if int(t) < len(EQ_ROWS) else 0
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
    return int(rows + int(nconmax) * _rows_per_contact(condim))
