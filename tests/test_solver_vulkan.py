"""The constraint solver on Vulkan's SPIR-V path (Mesa's lavapipe on CPU machines).

Mesa's software Vulkan gives every shader invocation one loop counter for all its
loops (65535 back-edges, then every loop exits after its current iteration, silently;
see kernels/solver.py), so a solver launch that ran all iterations of a world in one
thread stopped early there, leaving wrong or NaN qacc (measured on test_solver.py's
models in f32: PGS stopped after 32 sweeps of the 12-dof joint model; PGS, CG and
Newton with elliptic cones on the condim-6 contact model). The solver now runs a
bounded number of passes per launch where a backend has such a limiter. One
subprocess (Taichi runs one backend per process) solves the same model with PGS, CG
and Newton, pyramidal and elliptic cones (condim 3, 4 and 6: the 2-, 3- and
5-dimensional friction QCQPs), copying MuJoCo's rows, mass matrix and smooth
acceleration in, so that only factor_m and the solver's kernels compile (lavapipe
compiles large kernels slowly: ~70 s of CPU time with cold Taichi and Mesa caches),
and compares with MuJoCo at the f32 tolerances of test_solver.py. On lavapipe it also
solves again in a single launch, as the solver did before, and checks that the loop
counter then runs out for PGS and CG: the model is large enough for this test to have
caught the fault. With MuJoCo's default island flag, CG and Newton (elliptic cones)
solve the same model island by island (three bodies on the floor: up to three
islands per world), at the same tolerances.
"""
import json
import os
import sys

import spirv
import subproc

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))

MODEL_XML = """
<mujoco>
  <option solver="{solver}" cone="{cone}" tolerance="1e-8" iterations="100"
          jacobian="dense" impratio="{impratio}">
    <flag island="{island}"/>
  </option>
  <default><geom friction="0.8 0.02 0.002"/></default>
  <worldbody>
    <geom name="floor" type="plane" size="4 4 .1" condim="1"/>
    <body name="box" pos="0 0 .05">
      <freejoint/><geom type="box" size=".1 .08 .05" condim="3"/>
    </body>
    <body name="capsule" pos=".4 0 .04">
      <freejoint/><geom type="capsule" size=".04 .12" euler="0 90 0" condim="4"/>
    </body>
    <body name="ball" pos="-.4 0 .06">
      <freejoint/><geom type="sphere" size=".06" condim="6"/>
    </body>
  </worldbody>
</mujoco>
"""


def _solve_all(arch):
    """Each solver and cone on MODEL_XML in f32 on ``arch``: the largest scaled errors
    against MuJoCo, the passes per launch the solve used and the passes it needed."""
    import mujoco

    import tiphys
    from tiphys.kernels.solver import W_LIMIT, _solve, loop_limit
    tiphys.init(arch=arch, precision="f32")
    from test_solver import (F32_TOL, SOLVERS, compare, contact_state, mujoco_rows,
                             tiphys_solve)
    out = {"loop_limit": loop_limit()}
    for solver in SOLVERS:
        for cone in ("pyramidal", "elliptic"):
            xml = MODEL_XML.format(solver=solver, cone=cone, island="disable",
                                   impratio="1" if cone == "pyramidal" else "3")
            mjm = mujoco.MjModel.from_xml_string(xml)
            m = tiphys.load_model_from_string(xml)
            qpos, qvel = contact_state(mjm, f"vulkan {solver} {cone}")
            recs = mujoco_rows(mjm, qpos, qvel)
            d = tiphys_solve(m, recs, qpos, qvel, mujoco_smooth=True)
            worst, iters = compare(m, d, recs, 1.0, niter=None,
                                   state_slack=F32_TOL[solver])
            passes = int(m.opt.iterations) + (2 if solver == "PGS" else 1)
            scratch = d.scratch.solver
            npass = scratch.get("npass", passes)
            one_launch_limited = False
            if out["loop_limit"] is not None:
                # the same solve in one launch, as before: did the limiter cut it short?
                _solve(m, d, scratch, passes, 2)
                one_launch_limited = bool(scratch["sw"].to_numpy()[:, W_LIMIT].any())
            out[f"{solver} {cone}"] = {
                "worst": worst, "iterations": iters, "npass": npass, "passes": passes,
                "one_launch_limited": one_launch_limited,
                "ncon": [int(r["ncon"]) for r in recs]}
    for solver in ("CG", "Newton"):
        xml = MODEL_XML.format(solver=solver, cone="elliptic", island="enable",
                               impratio="3")
        mjm = mujoco.MjModel.from_xml_string(xml)
        m = tiphys.load_model_from_string(xml)
        qpos, qvel = contact_state(mjm, f"vulkan islands {solver}")
        recs = mujoco_rows(mjm, qpos, qvel)
        d = tiphys_solve(m, recs, qpos, qvel, mujoco_smooth=True)
        worst, iters = compare(m, d, recs, 1.0, niter=None, state_slack=F32_TOL[solver])
        out[f"{solver} islands"] = {
            "worst": worst, "iterations": iters,
            "nisland": [int(r["want"]["nisland"]) for r in recs],
            "ncon": [int(r["ncon"]) for r in recs]}
    return out


@pytest.mark.parametrize("arch", spirv.device_archs())
def test_solvers_on_device_backends_match_mujoco(arch):
    res = subproc.run([os.path.abspath(__file__), arch], key=f"{arch}-f32", cwd=HERE)
    assert res.returncode == 0, res.stderr[-3000:]
    out = json.loads(res.stdout.strip().splitlines()[-1])
    from test_solver import F32_TOL
    limit = out.pop("loop_limit")
    assert len(out) == 8
    for case, r in out.items():
        assert max(r["ncon"]) >= 3, f"{case}: too few contacts to test ({r['ncon']})"
        if case.endswith("islands"):
            assert max(r["nisland"]) >= 2, f"{case}: {r['nisland']}"
        for k, err in r["worst"].items():
            assert err < F32_TOL[case.split()[0]], f"{case} {k}: scaled error {err}"
    if limit is not None:
        # the model is large enough that running every pass in one launch, as the
        # solver did before, runs out of lavapipe's loop counter with PGS and CG
        # (Newton converges in a few iterations here)
        for case in ("PGS pyramidal", "PGS elliptic", "CG pyramidal", "CG elliptic"):
            assert out[case]["one_launch_limited"], f"{case}: {out[case]}"


if __name__ == "__main__" and sys.argv[1:2] in (["vulkan"], ["cuda"]):
    sys.path.insert(0, HERE)
    print(json.dumps(_solve_all(sys.argv[1]), default=float))
