"""tiphys.envs: Gymnasium's MuJoCo v5 tasks over tiphys worlds, stepped side by side with
Gymnasium's own environments (a SyncVectorEnv of MuJoCo C) on the same seeds and
actions: observations, rewards, terminations, truncations and autoresets agree."""
import gymnasium
import numpy as np
import pytest
from gymnasium.vector import AutoresetMode

import tiphys.envs as te

NENV = 3
# (steps, whether an episode must end in that many steps with random actions): long
# enough for the terminating tasks to autoreset at least once
STEPS = {"Ant-v5": (12, False), "HalfCheetah-v5": (12, False), "Hopper-v5": (60, True),
         "Walker2d-v5": (60, True), "Humanoid-v5": (12, False),
         "HumanoidStandup-v5": (8, False), "Swimmer-v5": (12, False),
         "InvertedPendulum-v5": (60, True), "InvertedDoublePendulum-v5": (40, True),
         "Reacher-v5": (55, True), "Pusher-v5": (12, False)}


def _lockstep(task, steps, mode=AutoresetMode.NEXT_STEP, seed=7):
    """Step Gymnasium's and tiphys's vector envs together; the worst relative
    observation and reward differences and how many episodes ended."""
    g = gymnasium.make_vec(task, num_envs=NENV, vectorization_mode="sync",
                           vector_kwargs={"autoreset_mode": mode})
    t = te.make_vec(task, num_envs=NENV, autoreset_mode=mode)
    assert t.single_observation_space.shape == g.single_observation_space.shape
    np.testing.assert_array_equal(t.single_action_space.low, g.single_action_space.low)
    np.testing.assert_array_equal(t.single_action_space.high, g.single_action_space.high)
    og, _ = g.reset(seed=seed)
    ot, _ = t.reset(seed=seed)
    worst = np.abs(og - ot).max() / (1 + np.abs(og).max())
    rng = np.random.default_rng(seed)
    space = g.single_action_space
    ended = 0
    for k in range(steps):
        act = rng.uniform(space.low, space.high, (NENV,) + space.shape).astype(np.float32)
        og, rg, tg, trg, ig = g.step(act)
        ot, rt, tt, trt, it = t.step(act)
        np.testing.assert_array_equal(tt, tg, err_msg=f"{task} terminated, step {k}")
        np.testing.assert_array_equal(trt, trg, err_msg=f"{task} truncated, step {k}")
        worst = max(worst, np.abs(og - ot).max() / (1 + np.abs(og).max()),
                    np.abs(rg - rt).max() / (1 + np.abs(rg).max()))
        if mode == AutoresetMode.SAME_STEP and "final_obs" in ig:
            done = ig["_final_obs"]
            np.testing.assert_array_equal(it["_final_obs"], done)
            fg = np.stack([ig["final_obs"][i] for i in np.flatnonzero(done)])
            ft = it["final_obs"][done]
            worst = max(worst, np.abs(fg - ft).max() / (1 + np.abs(fg).max()))
        ended += int(np.sum(tg | trg))
    g.close()
    t.close()
    return worst, ended


@pytest.mark.parametrize("task", sorted(te.TASKS))
def test_task_matches_gymnasium_step_by_step(task):
    steps, must_end = STEPS[task]
    worst, ended = _lockstep(task, steps)
    assert worst < 1e-8, f"{task}: worst relative difference {worst:.2e}"
    if must_end:
        assert ended > 0, f"{task}: no episode ended in {steps} steps; autoreset untested"


def test_same_step_autoreset_matches_gymnasium():
    worst, ended = _lockstep("InvertedPendulum-v5", 60, mode=AutoresetMode.SAME_STEP)
    assert ended > 0 and worst < 1e-8


def test_reset_mask_resets_only_the_chosen_worlds():
    t = te.make_vec("Hopper-v5", num_envs=4, autoreset_mode=AutoresetMode.DISABLED)
    obs0, _ = t.reset(seed=1)
    for _ in range(3):
        obs, *_ = t.step(np.zeros((4, 3), dtype=np.float32))
    mask = np.array([True, False, True, False])
    again, _ = t.reset(options={"reset_mask": mask})
    # worlds 0 and 2 draw their second reset from their own generators; 1 and 3 keep
    # their state and observation
    np.testing.assert_array_equal(again[~mask], obs[~mask])
    assert not np.allclose(again[mask], obs[mask])
    g = gymnasium.make("Hopper-v5")
    g.reset(seed=1)  # world 0's generator: seed + 0
    expect, _ = g.reset()
    np.testing.assert_allclose(again[0], expect, rtol=0, atol=1e-12)
    # the kept worlds keep stepping as if nothing happened
    t2 = te.make_vec("Hopper-v5", num_envs=4, autoreset_mode=AutoresetMode.DISABLED)
    t2.reset(seed=1)
    for _ in range(4):
        ref, *_ = t2.step(np.zeros((4, 3), dtype=np.float32))
    nxt, *_ = t.step(np.zeros((4, 3), dtype=np.float32))
    np.testing.assert_array_equal(nxt[~mask], ref[~mask])


def test_bad_arguments_are_clear_errors():
    with pytest.raises(ValueError, match="unknown task 'Cartpole-v9'"):
        te.make_vec("Cartpole-v9", 2)
    with pytest.raises(ValueError, match="num_envs must be a positive integer"):
        te.make_vec("Hopper-v5", 2.5)
    with pytest.raises(TypeError, match="unexpected keyword argument.*healthy_rewrd"):
        te.make_vec("Hopper-v5", 2, healthy_rewrd=2.0)
    t = te.make_vec("Hopper-v5", 2)
    t.reset(seed=0)
    with pytest.raises(ValueError, match=r"actions must have shape \(2, 3\)"):
        t.step(np.zeros((2, 4), dtype=np.float32))
    with pytest.raises(ValueError, match="reset_mask must have shape"):
        t.reset(options={"reset_mask": [True]})


def test_task_keywords_change_the_task_as_in_gymnasium():
    kw = dict(forward_reward_weight=2.0, ctrl_cost_weight=0.3, healthy_reward=0.5)
    g = gymnasium.make_vec("Walker2d-v5", num_envs=2, vectorization_mode="sync", **kw)
    t = te.make_vec("Walker2d-v5", 2, **kw)
    g.reset(seed=4)
    t.reset(seed=4)
    act = np.full((2, 6), 0.3, dtype=np.float32)
    for _ in range(5):
        _, rg, *_ = g.step(act)
        _, rt, *_ = t.step(act)
    np.testing.assert_allclose(rt, rg, rtol=1e-9, atol=1e-9)


def test_per_world_parameters_match_gymnasium_envs_with_those_parameters():
    """Domain randomization: friction and masses set per world (set_param) step as
    Gymnasium's environments whose models were given the same values one by one."""
    g = gymnasium.make_vec("Ant-v5", num_envs=NENV, vectorization_mode="sync")
    t = te.make_vec("Ant-v5", NENV)
    rng = np.random.default_rng(3)
    base = g.envs[0].unwrapped.model
    friction = base.geom_friction[None] * rng.uniform(0.5, 1.5, (NENV, base.ngeom, 1))
    mass = base.body_mass[None] * rng.uniform(0.8, 1.2, (NENV, base.nbody))
    for i, env in enumerate(g.envs):
        env.unwrapped.model.geom_friction[:] = friction[i]
        env.unwrapped.model.body_mass[:] = mass[i]
    t.set_param("geom_friction", friction)
    t.set_param("body_mass", mass)
    og, _ = g.reset(seed=11)
    ot, _ = t.reset(seed=11)
    act = rng.uniform(-1, 1, (NENV, 8)).astype(np.float32)
    for _ in range(10):
        og, rg, *_ = g.step(act)
        ot, rt, *_ = t.step(act)
    np.testing.assert_allclose(ot, og, rtol=1e-8, atol=1e-8)
    np.testing.assert_allclose(rt, rg, rtol=1e-8, atol=1e-8)
    assert np.ptp(rt) > 1e-6  # the worlds really differ


def readme_block(title: str) -> str:
    """The first Python code block of the README section headed ``### title``."""
    import os
    import re
    text = open(os.path.join(os.path.dirname(__file__), "..", "README.md")).read()
    section = text[text.index(f"### {title}"):]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_the_readme_gymnasium_example_runs():
    scope: dict = {}
    exec(compile(readme_block("Gymnasium"), "README.md (Gymnasium)", "exec"), scope)
    assert scope["obs"].shape == (16, 105)
    import tiphys
    assert tiphys.get_param(scope["envs"].model, "geom_friction").shape[0] == 16


def test_the_readme_mujoco_example_runs_and_agrees():
    scope: dict = {}
    exec(compile(readme_block("Coming from MuJoCo"), "README.md (Coming from MuJoCo)",
                 "exec"), scope)
    mjd, d = scope["mjd"], scope["d"]
    assert abs(mjd.qpos[0]) > 0.1  # it swung
    np.testing.assert_allclose(d.numpy("qpos")[:, 0], mjd.qpos[0], rtol=1e-9, atol=1e-12)


# the README's MJX block (on stdin), run in f64; prints both engines' states
MJX_README_SCRIPT = """
import json, sys
import numpy as np
import tiphys
tiphys.init(arch="cpu", precision="f64")
scope = {}
exec(compile(sys.stdin.read(), "README.md (Coming from MJX)", "exec"), scope)
dx, d = scope["dx"], scope["d"]
print(json.dumps({"heights": np.asarray(scope["heights"]).tolist(),
                  "dtype": str(np.asarray(dx.qpos).dtype),
                  "mjx": [np.asarray(dx.qpos).tolist(), np.asarray(dx.qvel).tolist()],
                  "tiphys": [d.numpy("qpos").tolist(), d.numpy("qvel").tolist()]}))
"""


def test_the_readme_mjx_example_runs_and_agrees():
    """README "Coming from MJX": MJX's vmapped, jitted step and tiphys' batched step
    from the same heights, in f64; every world's free joint agrees. In a process of
    its own: JAX starts threads (a later fork in this worker would warn) and its x64
    switch is global."""
    import json
    import subprocess
    import sys
    res = subprocess.run([sys.executable, "-c", MJX_README_SCRIPT],
                         input=readme_block("Coming from MJX"), capture_output=True,
                         text=True, timeout=600)
    assert res.returncode == 0, res.stderr[-3000:]
    out = json.loads(res.stdout.strip().splitlines()[-1])
    ours, theirs = (np.array(out[k][0]) for k in ("tiphys", "mjx"))
    assert out["dtype"] == "float64" and ours.shape == theirs.shape == (8, 7)
    assert np.ptp(out["heights"]) > 0.3 and np.all(ours[:, 2] < 0.06)  # all fell and landed
    np.testing.assert_allclose(ours, theirs, rtol=0, atol=1e-9)
    np.testing.assert_allclose(out["tiphys"][1], out["mjx"][1], rtol=0, atol=1e-6)
