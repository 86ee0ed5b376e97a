"""Rollouts spread over Ray workers: many tiphys batches on many processes or machines.

    pool = tiphys.distributed.RayRollout("robot.xml", nworker=4)   # ray.init() if needed
    state, sensordata = pool.rollout(initial_state, control, nstep=200)
    pool.close()

``RayRollout`` starts ``nworker`` Ray actors; each compiles the model once (from an
MJCF path or text, with its assets) in its own process with ``tiphys.init(arch,
precision)`` and keeps a Data per batch size. ``rollout`` splits the worlds (the
rows of ``initial_state``, and of ``control`` when it has one per world) into
``nworker`` contiguous chunks, runs ``tiphys.rollout`` on each chunk in its actor at
the same time, and gathers the results in world order: (state, sensordata) of shapes
(nworld, nstep, nstate) and (nworld, nstep, nsensordata), exactly what one process
computing all the worlds gives (tests/test_distributed.py checks it world by world).

On a cluster: start Ray on the machines (``ray start --head`` on one,
``ray start --address=HEAD:6379`` on the others), install tiphys on each, and pass
``address="auto"`` (or call ``ray.init(address=...)`` first). Each actor asks Ray for
``num_cpus`` CPUs (and ``num_gpus`` GPUs for ``arch="cuda"``), so Ray places them
where there is room. The model file must be readable on every machine (or pass
``xml=`` text and ``assets=``).

Ray is an optional dependency (``pip install tiphys[ray]``).
"""
from __future__ import annotations

from typing import Optional

import numpy as np


def _ray():
    try:
        import ray
    except ImportError:
        raise ImportError("tiphys.distributed needs Ray, an optional dependency of tiphys: "
                          "pip install tiphys[ray]") from None
    return ray


class _Worker:
    """One Ray actor's tiphys process: the model compiled once, a Data per batch size."""

    def __init__(self, path, xml, assets, arch, precision, control_spec):
        import tiphys
        tiphys.init(arch=arch, precision=precision)
        if xml is not None:
            self.m = tiphys.load_model_from_string(xml, assets=assets)
        else:
            self.m = tiphys.load_model(path, assets=assets)
        self.datas = {}
        self.control_spec = control_spec

    def sizes(self) -> dict:
        from tiphys import State, state_size
        return {"nstate": state_size(self.m, State.FULLPHYSICS),
                "ncontrol": state_size(self.m, self.control_spec),
                "nsensordata": int(self.m.nsensordata)}

    def rollout(self, initial_state, control, nstep, initial_warmstart):
        import tiphys
        n = len(initial_state)
        d = self.datas.get(n)
        if d is None:
            d = self.datas[n] = tiphys.make_data(self.m, n)
        return tiphys.rollout(self.m, d, initial_state, control,
                              control_spec=self.control_spec, nstep=nstep,
                              initial_warmstart=initial_warmstart)


class RayRollout:
    """A pool of ``nworker`` Ray actors rolling out one model (see the module text)."""

    def __init__(self, path: Optional[str] = None, *, xml: Optional[str] = None,
                 assets: Optional[dict] = None, nworker: int = 2, arch: str = "cpu",
                 precision: str = "f64", control_spec=None, num_cpus: float = 1,
                 num_gpus: float = 0, address: Optional[str] = None,
                 start_timeout: float = 600.0):
        from .state import State
        ray = _ray()
        if (path is None) == (xml is None):
            raise ValueError("RayRollout: give the model as a path or as xml= text, not "
                             "both")
        if not isinstance(nworker, (int, np.integer)) or nworker < 1:
            raise ValueError(f"RayRollout: nworker must be a positive integer, not {nworker!r}")
        if not ray.is_initialized():
            ray.init(address=address, include_dashboard=False, log_to_driver=False)
        spec = State.CTRL if control_spec is None else control_spec
        actor = ray.remote(num_cpus=num_cpus, num_gpus=num_gpus)(_Worker)
        self.nworker = int(nworker)
        self.workers = [actor.remote(path, xml, assets, arch, precision, spec)
                        for _ in range(self.nworker)]
        # compiled everywhere; an actor Ray cannot place (too few CPUs/GPUs) would wait
        # forever: say so instead
        pending = [w.sizes.remote() for w in self.workers]
        ready, _ = ray.wait(pending, num_returns=len(pending), timeout=start_timeout)
        if len(ready) < len(pending):
            for w in self.workers:
                ray.kill(w)
            raise RuntimeError(
                f"RayRollout: {len(pending) - len(ready)} of {len(pending)} workers did not "
                f"start within {start_timeout:g} s; each asks Ray for num_cpus={num_cpus} "
                f"and num_gpus={num_gpus}, and the cluster has "
                f"{ray.cluster_resources()}: use fewer workers or smaller requests")
        sizes = ray.get(pending)
        self.nstate, self.ncontrol = sizes[0]["nstate"], sizes[0]["ncontrol"]
        self.nsensordata = sizes[0]["nsensordata"]

    def rollout(self, initial_state, control=None, *, nstep: Optional[int] = None,
                initial_warmstart=None) -> tuple[np.ndarray, np.ndarray]:
        """``tiphys.rollout`` of every world (rows of ``initial_state``), the worlds split
        over the workers; returns (state, sensordata) in world order."""
        ray = _ray()
        state0 = np.asarray(initial_state, dtype=np.float64)
        if state0.ndim != 2 or state0.shape[1] != self.nstate:
            raise ValueError(f"RayRollout.rollout: initial_state must have shape (nworld, "
                             f"{self.nstate}), got {state0.shape}")
        nworld = len(state0)
        ctrl = None if control is None else np.asarray(control, dtype=np.float64)
        per_world_ctrl = ctrl is not None and ctrl.ndim == 3 and ctrl.shape[0] == nworld \
            and nworld > 1
        warm = None if initial_warmstart is None else np.asarray(initial_warmstart,
                                                                 dtype=np.float64)
        per_world_warm = warm is not None and warm.ndim == 2 and warm.shape[0] == nworld \
            and nworld > 1
        bounds = np.linspace(0, nworld, min(self.nworker, nworld) + 1).round().astype(int)
        futures = []
        for k, (lo, hi) in enumerate(zip(bounds[:-1], bounds[1:])):
            futures.append(self.workers[k].rollout.remote(
                state0[lo:hi], ctrl[lo:hi] if per_world_ctrl else ctrl, nstep,
                warm[lo:hi] if per_world_warm else warm))
        parts = ray.get(futures)
        return (np.concatenate([p[0] for p in parts]),
                np.concatenate([p[1] for p in parts]))

    def close(self) -> None:
        """Stop the actors (Ray itself keeps running)."""
        ray = _ray()
        for w in self.workers:
            ray.kill(w)
        self.workers = []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
