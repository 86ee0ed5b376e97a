"""The loop limiter of Mesa's software Vulkan (lavapipe / llvmpipe).

lavapipe compiles a shader with one loop counter per invocation, shared by every loop
in it: each loop back-edge decrements it from 65535 (gallivm's
LP_MAX_TGSI_LOOP_ITERATIONS), and once it reaches zero every loop exits after its
current iteration, silently. The invocations lavapipe runs together as the lanes of one
SIMD vector share the counter, so a long thread cuts its neighbours short too
(tests/test_ray.py's terrain rays). A kernel thread that runs long loops there computes
something else than it says. ``loop_limit()`` measures the limit once per Taichi
initialisation; a kernel passed ``probe()`` (2 where there is a limit, else 0) ends a
thread with ``limit_reached(probe)`` (a loop of that many iterations that ran fewer)
to learn whether its loops were cut. The solver then runs fewer iterations per launch
(kernels/solver.py); the SDF collisions and distances (column CUT_COLLISION of
``d.loop_cut``), rangefinders and tactile sensors (CUT_SENSOR) count the cut threads,
which tiphys/report.py turns into warnings; the ray functions (tiphys/ray.py) return NaN for
a cut ray, with a warning.
"""
import taichi as ti

from . import config

LOOP_PROBE = 1 << 17  # longer than any known per-invocation loop limit
CUT_COLLISION, CUT_SENSOR = 0, 1  # d.loop_cut's columns: SDF collisions and distances;
#                                   rangefinders and tactile sensors


@ti.kernel
def _loop_limit_probe(n: ti.i32, out: ti.types.ndarray()):
    for _ in range(1):
        count = 0
        while count < n:
            count += 1
        out[0] = count


_LOOP_LIMIT = {}


def loop_limit():
    """The number of loop iterations one kernel thread may run on this backend before
    its loops are cut short (lavapipe: 65535), or None where there is no such limit
    (measured once per Taichi initialisation; CPU and CUDA have none)."""
    key = config.generation()
    if key not in _LOOP_LIMIT:
        limit = None
        if config.arch() not in ("cpu", "cuda"):
            out = ti.ndarray(ti.i32, (1,))
            _loop_limit_probe(LOOP_PROBE, out)
            count = int(out.to_numpy()[0])
            limit = count if count < LOOP_PROBE else None
        _LOOP_LIMIT[key] = limit
    return _LOOP_LIMIT[key]


def probe() -> int:
    """The ``probe`` argument of a kernel that checks its threads: 2 on a backend with a
    loop limit, 0 (no check, no cost) elsewhere."""
    return 0 if loop_limit() is None else 2


@ti.func
def limit_reached(probe):
    """1 if this thread's loops are being cut short by a loop limiter: a loop of
    ``probe`` (2; 0 where there is no limiter) iterations that ran fewer."""
    count = 0
    for _ in range(probe):
        count += 1
    return count < probe
