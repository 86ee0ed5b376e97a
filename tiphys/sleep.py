"""Sleeping trees on the host side: what tiphys refuses with <flag sleep="enable"/>, and
the sleep state at reset (mj_resetData's part). The engine side is kernels/sleep.py;
forward.py calls its stages where MuJoCo 3.4.0 calls them."""
from __future__ import annotations

import numpy as np

from .kernels.consts import EQ_FLEX, EQ_TENDON, INT_RK4
from .kernels import sleep as ksleep

POLICY_INIT = ksleep.POLICY_INIT


def check_supported(m, stepping: bool = False) -> None:
    """NotImplementedError for what tiphys does not simulate with sleeping trees yet,
    and for what MuJoCo 3.4.0 itself stops on (tendon and flex equalities)."""
    opt = m.opt
    flag = '<option><flag sleep="enable"/>'
    if stepping and opt.integrator == INT_RK4:
        raise NotImplementedError(f"{flag} with the RK4 integrator is not supported yet")
    eq_type = [int(t) for t in np.asarray(m.arrays.eq_type).reshape(-1)[:m.neq]]
    for kind, name in ((EQ_TENDON, "tendon"), (EQ_FLEX, "flex")):
        if kind in eq_type:
            raise NotImplementedError(
                f"{flag} with a <{name}> equality (equality {eq_type.index(kind)}): "
                f"MuJoCo 3.4.0 stops with \"{name} equality does not yet support "
                "sleeping\"")


def reset_sleep(m, d, world=None, keyframe=None) -> None:
    """mj_resetData's sleep part: every tree awake (reset_data set tree_asleep), the
    awake arrays updated; with sleep enabled and trees whose policy is "init"
    (<body sleep="init">), a forward pass and mj_sleep put those trees to sleep, an
    error naming the first that could not (as MuJoCo's). ``world``: reset_data of that
    world only (``keyframe``: the one it reset to)."""
    ninit = 0
    if m.opt.enabled("sleep") and m.ntree:
        policy = np.asarray(m.arrays.tree_sleep_policy).reshape(-1)[:m.ntree]
        ninit = int(np.sum(policy == POLICY_INIT))
    if ninit == 0:
        ksleep.update_sleep(m, d)
        return
    if world is not None:
        _reset_world_init(m, d, world, keyframe)
        return
    check_supported(m)
    from .forward import _forward
    ksleep.update_sleep(m, d, staticawake=True)
    _forward(m, d)
    asleep = np.where(policy == POLICY_INIT, -1, ksleep.AWAKE).astype(np.int32)
    d.tree_asleep.from_numpy(np.tile(asleep, (d.nworld, 1)).reshape(d.tree_asleep.shape))
    slept = ksleep.sleep(m, d).to_numpy()
    bad = np.nonzero(slept != ninit)[0]
    if len(bad):
        states = d.tree_asleep.to_numpy()[bad[0]]
        tree = next(i for i in range(m.ntree) if policy[i] == POLICY_INIT and states[i] < 0)
        root = int(np.asarray(m.arrays.tree_bodyadr).reshape(-1)[tree])
        from .model import id2name
        raise ValueError(
            f"{ninit} trees were marked as sleep='init' but only {int(slept[bad[0]])} could "
            f"be slept (world {int(bad[0])}). Body '{id2name(m, 'body', root) or ''}' "
            f"(id={root}) is the root of the first tree that could not be slept.")
    for name in ("qacc_smooth", "qfrc_smooth"):
        getattr(d, name).fill(0)
    for name in ("ne", "nf", "nl", "nefc", "nJ", "nisland", "nidof"):
        getattr(d, name).fill(0)
    ksleep.update_sleep(m, d)


def _reset_world_init(m, d, world: int, keyframe) -> None:
    """reset_data(world=k) with sleep="init" trees: world k as a one-world Data of the
    same capacities is after its reset (the forward pass and mj_sleep included), copied
    into world k on the device; the other worlds are not touched."""
    if m._params:
        raise NotImplementedError(
            "reset_data(world=k) of a model with <body sleep=\"init\"> trees, sleep "
            "enabled and parameters set per world (set_param) is not supported yet "
            "(reset every world)")
    from .kernels.check import copy_world
    from .model import make_data
    from .types import DATA_EXTRA_FIELDS, DATA_FIELDS
    one = make_data(m, 1, keyframe, nconmax=d.nconmax, njmax=d.njmax, njnnz=d.njnnz,
                    nhnnz=d.nhnnz, nbroadmax=d.nbroadmax)
    for name, _, _, _ in DATA_FIELDS + DATA_EXTRA_FIELDS:
        copy_world(getattr(one, name), getattr(d, name), world)
    # the host's record of what the fields hold (tiphys/forward.py)
    d._constrained |= one._constrained
    d._islands_set |= one._islands_set
    d._energy_set |= one._energy_set
