"""The runtime settings kernels read (float precision, arch, Taichi's generation), and
``per_options``, the host-side cache of facts about a model and its options.

``tiphys.backend.init`` writes them here when it initialises Taichi and re-exports the
readers (``tiphys.backend.precision`` is ``precision`` below), so there is one record
and kernels/ never imports tiphys. Reading precision, arch or float_dtype before any
``init`` runs the default init that tiphys.backend registers (cpu, f64).
"""
import math
from typing import Callable, Optional

import taichi as ti

STATE = {"initialized": False, "arch": None, "precision": None, "options": None,
         "generation": 0}

_DEFAULT_INIT: list = [None]  # tiphys.backend.init, registered when it is imported


def set_default_init(init: Optional[Callable[[], None]]) -> None:
    """The function ``ensure_init`` calls when Taichi is not initialised yet."""
    _DEFAULT_INIT[0] = init


def ensure_init() -> None:
    if not STATE["initialized"]:
        if _DEFAULT_INIT[0] is None:
            raise RuntimeError("Taichi is not initialised: call tiphys.init() first")
        _DEFAULT_INIT[0]()


def generation() -> int:
    """How many times Taichi was initialised: arrays made under an older generation are
    gone (``init(..., reinit=True)``)."""
    return STATE["generation"]


def float_dtype():
    ensure_init()
    return ti.f64 if STATE["precision"] == "f64" else ti.f32


def precision() -> str:
    ensure_init()
    return STATE["precision"]


def arch() -> str:
    ensure_init()
    return STATE["arch"]


def cuda_world_block():
    """Threads per CUDA block for the loops that run one long serial body per world or
    island (the constraint solvers), read when such a kernel compiles; None elsewhere
    (Taichi's default block). With Taichi's 128 threads per block, 8192 worlds fill
    only 64 blocks, fewer than an H100 or H200 has multiprocessors (132).
    ``TIPHYS_CUDA_WORLD_BLOCK`` overrides it (0: Taichi's default)."""
    import os
    if ti.lang.impl.current_cfg().arch != ti.cuda:
        return None
    value = int(os.environ.get("TIPHYS_CUDA_WORLD_BLOCK", CUDA_WORLD_BLOCK))
    return value or None


CUDA_WORLD_BLOCK = 32  # see cuda_world_block: measured on an H200 (RESULTS.md, 2026-11-27)


def per_options(m, key: str, compute):
    """``compute(m)``, kept in the model's plans (``m.plans.<key>``, declared in
    scratch.PLANS) until an option changes (options_of): host facts of the model and
    its options that the step's host code reads every call."""
    cached = getattr(m.plans, key)
    opt = options_of(m)
    if cached is not None and cached[0] is opt:
        return cached[1]
    value = compute(m)
    setattr(m.plans, key, (opt, value))
    return value


def options_of(m):
    """The model's current immutable options object (``m.opt.frozen`` behind tiphys's
    settable view; ``m.opt`` itself where there is no view): replaced whenever an
    option changes, so host plans compare it by identity."""
    opt = m.opt
    return getattr(opt, "frozen", opt)


# serial loops (tiphys/launch.py): on a CPU backend ("cpu"), launches for at most
# "worlds" worlds run kernels whose loops are all serial; "building" is true while
# such a kernel is being built (tiphys.init configures the first two)
SERIAL = {"cpu": False, "worlds": 0, "building": False}


def serial_loops(load: int) -> bool:
    """Whether launches for a Data of serial load ``load`` (serial_load: its worlds
    weighted by their model's work) run with serial loops: then a per-world serial
    algorithm costs no parallelism (kernels pick it, e.g. the tree passes of
    smooth.py)."""
    return SERIAL["cpu"] and load <= SERIAL["worlds"]


# serial_load's model cost of the gym humanoid (nv 23, one tree, 18 geoms): the unit
# of SERIAL["worlds"]
LOAD_UNIT = 23 + 0.1 * 23 * 23 + 18


def serial_load(nworld: int, sizes: dict) -> int:
    """A Data's worlds weighted by their model's work per launch, in gym humanoid
    worlds: what SERIAL["worlds"] (tiphys.init's ``serial_worlds``) is compared with.
    Serial loops win while the work they leave to one thread costs less than the
    thread-pool wake-ups parallel loops pay (one per launch); a world's work per
    launch grows with its dofs, their trees' mass-matrix and solver blocks and its
    geoms: cost = nv + 0.1 nv^2 / ntree + ngeom. Fitted on 2 threads (2026-11-28, f64,
    ms per step at 64 worlds, serial / parallel over worlds): gym humanoid 4.5 / 8.8,
    ant 2.2 / 6.1, inverted pendulum 0.21 / 4.2, pusher 0.31 / 1.2, three humanoids
    (81 dofs, 3 trees) 10.6 / 7.0, box100 (100 free boxes) 32.6 / 18.6; the
    break-even worlds are about 150 / (cost / LOAD_UNIT). One world: 1 (world twins
    would run it on one thread; Taichi's own parallel loops were slower than serial
    ones on the large one-world scenes of benchmarks/bench_large.py)."""
    if int(nworld) <= 1:
        return 1
    nv, ngeom = int(sizes.get("nv", 0)), int(sizes.get("ngeom", 0))
    ntree = max(1, int(sizes.get("ntree", 1)))
    cost = nv + 0.1 * nv * nv / ntree + ngeom
    return max(1, math.ceil(int(nworld) * cost / LOAD_UNIT))


def building_twin() -> bool:
    """Whether the kernel being built is a CPU twin (serial loops, or parallel over
    worlds only; tiphys/launch.py): read with ti.static by kernels whose loops over
    (world, row) pairs would otherwise visit every row slot of every world (see
    solver._prepare)."""
    return bool(SERIAL["building"])


WORLDS_TAG = "_tiphys_nworld"  # attribute of an ndarray: the serial load of its Data
# class attribute of Model and Data: the names kernels/bind.py binds parameters to (the
# fields of tiphys/types.py's tables, and the model's sizes)
BOUND_NAMES_ATTR = "BOUND_NAMES"


# direct launches of name-bound calls (kernels/bind.py), installed by tiphys/launch.py:
# "entry"(kernel, args) -> the prepared launch of those arguments (or None), and
# "fire"(entry) -> launches it and returns True, or False when it may not be used now
DIRECT = {"entry": None, "fire": None}

# the call being recorded for replay (tiphys/replay.py: a Recorder), or None
RECORDING = [None]


def opaque() -> None:
    """Host code that does work a replayed step would skip (a user's Python callback)
    calls this: the call being recorded, if any, is not kept."""
    rec = RECORDING[0]
    if rec is not None:
        rec.ok = False


def tag_worlds(array, load: int):
    """Mark an array of a Data of serial load ``load`` (serial_load; tiphys/launch.py
    runs kernels given such an array with serial loops when the load is small);
    returns the array."""
    setattr(array, WORLDS_TAG, int(load))
    return array
