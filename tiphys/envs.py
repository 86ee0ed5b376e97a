"""Gymnasium vector environments over tiphys worlds: Gymnasium's MuJoCo v5 tasks.

    import tiphys.envs
    envs = tiphys.envs.make_vec("Ant-v5", num_envs=256)
    obs, info = envs.reset(seed=0)
    obs, reward, terminated, truncated, info = envs.step(envs.action_space.sample())

Each environment is one world of one tiphys Data; a step sets every world's ctrl,
steps all worlds ``frame_skip`` times and runs mj_rnePostConstraint, as Gymnasium's
MujocoEnv does for one. Observations, rewards, terminations and resets follow
Gymnasium 1.x's v5 classes (gymnasium/envs/mujoco/*_v5.py) definition by definition,
with the same constructor keywords, the same XML files (read from the installed
gymnasium package), the registered time limits, and the same random reset states for
the same seeds (world i draws from the generator a SyncVectorEnv gives env i: seed + i).
tests/test_envs.py steps both side by side and compares observations and rewards.

Autoreset follows gymnasium.vector.AutoresetMode: NEXT_STEP (Gymnasium's default: the
step after an episode ends resets that world and returns its first observation, reward
0), SAME_STEP (the world is reset in the step that ends it; the last observation is in
``info["final_obs"]``) or DISABLED (``reset(options={"reset_mask": mask})`` resets the
chosen worlds). A world is reset on the device (tiphys.reset_data(world=i)); the
others keep stepping. Gymnasium is an optional dependency (``pip install tiphys[gym]``).
"""
from __future__ import annotations

import os
from typing import Any, Optional

import numpy as np

try:
    import gymnasium
    from gymnasium.spaces import Box
    from gymnasium.utils import seeding
    from gymnasium.vector import AutoresetMode, VectorEnv
    from gymnasium.vector.utils import batch_space
except ImportError as e:  # pragma: no cover - exercised without the extra
    raise ImportError("tiphys.envs needs gymnasium: pip install 'tiphys[gym]'") from e

from . import model as _model

# ------------------------------------------------------------------------------------
# the tasks: each holds a task's constants and computes its observation, reward and
# termination for every world at once from host copies of Data fields
# ------------------------------------------------------------------------------------


class Task:
    """One Gymnasium v5 task. Subclasses set the class attributes and the methods."""
    xml_file = ""
    frame_skip = 1
    defaults: dict = {}
    fields: tuple = ("qpos", "qvel")  # Data fields observe/reward read

    def __init__(self, m, **kwargs):
        unknown = sorted(set(kwargs) - set(self.defaults))
        if unknown:
            raise TypeError(f"{type(self).__name__}: unexpected keyword argument(s) "
                            f"{', '.join(unknown)}; accepted: {', '.join(self.defaults)}")
        self.p = {**self.defaults, **kwargs}
        self.m = m
        self.dt = float(m.opt.timestep) * self.frame_skip

    def body(self, name: str) -> int:
        bid = _model.name2id(self.m, "body", name)
        if bid < 0:
            raise ValueError(f"{type(self).__name__}: the model has no body {name!r}")
        return bid

    def position(self, a: dict) -> np.ndarray:
        """What the reward's velocity is taken of (before and after a step)."""
        return a["qpos"][:, :1]

    def observe(self, a: dict) -> np.ndarray:
        raise NotImplementedError

    def reward(self, a: dict, before, after, action) -> tuple:
        """(reward, terminated) per world."""
        raise NotImplementedError

    def reset_state(self, rng, qpos0, qvel0):
        """One world's (qpos, qvel) after reset_model, drawing from ``rng`` in
        Gymnasium's order."""
        s = self.p["reset_noise_scale"]
        qpos = qpos0 + rng.uniform(low=-s, high=s, size=len(qpos0))
        qvel = qvel0 + rng.uniform(low=-s, high=s, size=len(qvel0))
        return qpos, qvel


def _ctrl_cost(weight, action):
    # Gymnasium sums the squares of the float32 action in float32
    return weight * np.sum(np.square(action), axis=-1)


def _state_vector(a):
    return np.concatenate([a["qpos"], a["qvel"]], axis=1)


class _NormalVelocityReset(Task):
    """qvel noise drawn from a standard normal (Ant, HalfCheetah, InvertedDoublePendulum)."""

    def reset_state(self, rng, qpos0, qvel0):
        s = self.p["reset_noise_scale"]
        qpos = qpos0 + rng.uniform(low=-s, high=s, size=len(qpos0))
        qvel = qvel0 + s * rng.standard_normal(len(qvel0))
        return qpos, qvel


class Ant(_NormalVelocityReset):
    xml_file = "ant.xml"
    frame_skip = 5
    defaults = dict(forward_reward_weight=1.0, ctrl_cost_weight=0.5, contact_cost_weight=5e-4,
                    healthy_reward=1.0, main_body=1, terminate_when_unhealthy=True,
                    healthy_z_range=(0.2, 1.0), contact_force_range=(-1.0, 1.0),
                    reset_noise_scale=0.1, exclude_current_positions_from_observation=True,
                    include_cfrc_ext_in_observation=True)
    fields = ("qpos", "qvel", "cfrc_ext", "xpos")

    def __init__(self, m, **kwargs):
        super().__init__(m, **kwargs)
        main = self.p["main_body"]
        self.main = self.body(main) if isinstance(main, str) else int(main)

    def position(self, a):
        return a["xpos"][:, self.main, :2]

    def _forces(self, a):
        lo, hi = self.p["contact_force_range"]
        return np.clip(a["cfrc_ext"], lo, hi)

    def observe(self, a):
        n = a["qpos"].shape[0]
        pos = a["qpos"][:, 2:] if self.p["exclude_current_positions_from_observation"] \
            else a["qpos"]
        parts = [pos, a["qvel"]]
        if self.p["include_cfrc_ext_in_observation"]:
            parts.append(self._forces(a)[:, 1:].reshape(n, -1))
        return np.concatenate(parts, axis=1)

    def healthy(self, a):
        lo, hi = self.p["healthy_z_range"]
        z = a["qpos"][:, 2]
        return np.isfinite(_state_vector(a)).all(axis=1) & (lo <= z) & (z <= hi)

    def reward(self, a, before, after, action):
        vx = ((after - before) / self.dt)[:, 0]
        healthy = self.healthy(a)
        n = len(healthy)
        contact = self.p["contact_cost_weight"] * np.sum(
            np.square(self._forces(a)).reshape(n, -1), axis=1)
        r = vx * self.p["forward_reward_weight"] + healthy * self.p["healthy_reward"] \
            - (_ctrl_cost(self.p["ctrl_cost_weight"], action) + contact)
        return r, ~healthy & self.p["terminate_when_unhealthy"]


class _Forward(Task):
    """Moving forward, nothing else: observation qpos (without its first ``skip``
    entries) and qvel, reward forward velocity minus control cost, no termination."""
    skip = 1

    def observe(self, a):
        pos = a["qpos"][:, self.skip:] if self.p["exclude_current_positions_from_observation"] \
            else a["qpos"]
        return np.concatenate([pos, a["qvel"]], axis=1)

    def reward(self, a, before, after, action):
        vx = ((after - before) / self.dt)[:, 0]
        r = self.p["forward_reward_weight"] * vx - _ctrl_cost(self.p["ctrl_cost_weight"], action)
        return r, np.zeros(len(r), dtype=bool)


class HalfCheetah(_NormalVelocityReset, _Forward):
    xml_file = "half_cheetah.xml"
    frame_skip = 5
    defaults = dict(forward_reward_weight=1.0, ctrl_cost_weight=0.1, reset_noise_scale=0.1,
                    exclude_current_positions_from_observation=True)


class Hopper(Task):
    xml_file = "hopper.xml"
    frame_skip = 4
    defaults = dict(forward_reward_weight=1.0, ctrl_cost_weight=1e-3, healthy_reward=1.0,
                    terminate_when_unhealthy=True, healthy_state_range=(-100.0, 100.0),
                    healthy_z_range=(0.7, float("inf")), healthy_angle_range=(-0.2, 0.2),
                    reset_noise_scale=5e-3, exclude_current_positions_from_observation=True)

    def observe(self, a):
        pos = a["qpos"][:, 1:] if self.p["exclude_current_positions_from_observation"] \
            else a["qpos"]
        return np.concatenate([pos, np.clip(a["qvel"], -10, 10)], axis=1)

    def healthy(self, a):
        z, angle = a["qpos"][:, 1], a["qpos"][:, 2]
        state = _state_vector(a)[:, 2:]
        lo, hi = self.p["healthy_state_range"]
        zlo, zhi = self.p["healthy_z_range"]
        alo, ahi = self.p["healthy_angle_range"]
        return (np.all((lo < state) & (state < hi), axis=1) & (zlo < z) & (z < zhi)
                & (alo < angle) & (angle < ahi))

    def reward(self, a, before, after, action):
        vx = ((after - before) / self.dt)[:, 0]
        healthy = self.healthy(a)
        r = self.p["forward_reward_weight"] * vx + healthy * self.p["healthy_reward"] \
            - _ctrl_cost(self.p["ctrl_cost_weight"], action)
        return r, ~healthy & self.p["terminate_when_unhealthy"]


class Walker2d(Hopper):
    xml_file = "walker2d_v5.xml"
    frame_skip = 4
    defaults = dict(forward_reward_weight=1.0, ctrl_cost_weight=1e-3, healthy_reward=1.0,
                    terminate_when_unhealthy=True, healthy_z_range=(0.8, 2.0),
                    healthy_angle_range=(-1.0, 1.0), reset_noise_scale=5e-3,
                    exclude_current_positions_from_observation=True)

    def healthy(self, a):
        z, angle = a["qpos"][:, 1], a["qpos"][:, 2]
        zlo, zhi = self.p["healthy_z_range"]
        alo, ahi = self.p["healthy_angle_range"]
        return (zlo < z) & (z < zhi) & (alo < angle) & (angle < ahi)


class Humanoid(Task):
    xml_file = "humanoid.xml"
    frame_skip = 5
    defaults = dict(forward_reward_weight=1.25, ctrl_cost_weight=0.1, contact_cost_weight=5e-7,
                    contact_cost_range=(-np.inf, 10.0), healthy_reward=5.0,
                    terminate_when_unhealthy=True, healthy_z_range=(1.0, 2.0),
                    reset_noise_scale=1e-2, exclude_current_positions_from_observation=True,
                    include_cinert_in_observation=True, include_cvel_in_observation=True,
                    include_qfrc_actuator_in_observation=True,
                    include_cfrc_ext_in_observation=True)
    fields = ("qpos", "qvel", "cinert", "cvel", "qfrc_actuator", "cfrc_ext", "xipos", "ctrl")

    def position(self, a):
        # mass_center(): the mass-weighted mean of xipos over all bodies (the masses of
        # each world, which set_param may have randomized)
        mass = self.m.param("body_mass")
        mass = np.broadcast_to(mass, (a["xipos"].shape[0], mass.shape[1]))
        num = np.einsum("wb,wbj->wj", mass, a["xipos"])
        return (num / mass.sum(axis=1)[:, None])[:, :2]

    def observe(self, a):
        n = a["qpos"].shape[0]
        p = self.p
        pos = a["qpos"][:, 2:] if p["exclude_current_positions_from_observation"] else a["qpos"]
        parts = [pos, a["qvel"]]
        if p["include_cinert_in_observation"]:
            parts.append(a["cinert"][:, 1:].reshape(n, -1))
        if p["include_cvel_in_observation"]:
            parts.append(a["cvel"][:, 1:].reshape(n, -1))
        if p["include_qfrc_actuator_in_observation"]:
            parts.append(a["qfrc_actuator"][:, 6:])
        if p["include_cfrc_ext_in_observation"]:
            parts.append(a["cfrc_ext"][:, 1:].reshape(n, -1))
        return np.concatenate(parts, axis=1)

    def _contact_cost(self, a, weight, bounds):
        n = a["qpos"].shape[0]
        cost = weight * np.sum(np.square(a["cfrc_ext"]).reshape(n, -1), axis=1)
        return np.clip(cost, *bounds)

    def reward(self, a, before, after, action):
        vx = ((after - before) / self.dt)[:, 0]
        lo, hi = self.p["healthy_z_range"]
        z = a["qpos"][:, 2]
        healthy = (lo < z) & (z < hi)
        costs = self.p["ctrl_cost_weight"] * np.sum(np.square(a["ctrl"]), axis=1) + \
            self._contact_cost(a, self.p["contact_cost_weight"], self.p["contact_cost_range"])
        r = self.p["forward_reward_weight"] * vx + healthy * self.p["healthy_reward"] - costs
        return r, ~healthy & self.p["terminate_when_unhealthy"]


class HumanoidStandup(Humanoid):
    xml_file = "humanoidstandup.xml"
    frame_skip = 5
    defaults = dict(uph_cost_weight=1, ctrl_cost_weight=0.1, impact_cost_weight=0.5e-6,
                    impact_cost_range=(-np.inf, 10.0), reset_noise_scale=1e-2,
                    exclude_current_positions_from_observation=True,
                    include_cinert_in_observation=True, include_cvel_in_observation=True,
                    include_qfrc_actuator_in_observation=True,
                    include_cfrc_ext_in_observation=True)
    fields = ("qpos", "qvel", "cinert", "cvel", "qfrc_actuator", "cfrc_ext", "ctrl")

    def position(self, a):
        return a["qpos"][:, :1]

    def reward(self, a, before, after, action):
        # as Gymnasium's: the height over the timestep (uph_cost_weight is not used)
        uph = (a["qpos"][:, 2] - 0) / float(self.m.opt.timestep)
        ctrl = self.p["ctrl_cost_weight"] * np.sum(np.square(a["ctrl"]), axis=1)
        impact = self._contact_cost(a, self.p["impact_cost_weight"],
                                    self.p["impact_cost_range"])
        r = uph - ctrl - impact + 1
        return r, np.zeros(len(r), dtype=bool)


class Swimmer(_Forward):
    xml_file = "swimmer.xml"
    frame_skip = 4
    skip = 2
    defaults = dict(forward_reward_weight=1.0, ctrl_cost_weight=1e-4, reset_noise_scale=0.1,
                    exclude_current_positions_from_observation=True)

    def position(self, a):
        return a["qpos"][:, 0:2]


class InvertedPendulum(Task):
    xml_file = "inverted_pendulum.xml"
    frame_skip = 2
    defaults = dict(reset_noise_scale=0.01)

    def observe(self, a):
        return np.concatenate([a["qpos"], a["qvel"]], axis=1)

    def reward(self, a, before, after, action):
        obs = self.observe(a)
        terminated = ~np.isfinite(obs).all(axis=1) | (np.abs(obs[:, 1]) > 0.2)
        return (~terminated).astype(np.float64), terminated


class InvertedDoublePendulum(_NormalVelocityReset):
    xml_file = "inverted_double_pendulum.xml"
    frame_skip = 5
    defaults = dict(healthy_reward=10.0, reset_noise_scale=0.1)
    fields = ("qpos", "qvel", "qfrc_constraint", "site_xpos")

    def observe(self, a):
        q = a["qpos"]
        return np.concatenate([q[:, :1], np.sin(q[:, 1:]), np.cos(q[:, 1:]),
                               np.clip(a["qvel"], -10, 10),
                               np.clip(a["qfrc_constraint"], -10, 10)[:, :1]], axis=1)

    def reward(self, a, before, after, action):
        x, y = a["site_xpos"][:, 0, 0], a["site_xpos"][:, 0, 2]
        terminated = y <= 1
        v1, v2 = a["qvel"][:, 1], a["qvel"][:, 2]
        dist = 0.01 * x ** 2 + (y - 2) ** 2
        vel = 1e-3 * v1 ** 2 + 5e-3 * v2 ** 2
        return self.p["healthy_reward"] * (~terminated) - dist - vel, terminated


class Reacher(Task):
    xml_file = "reacher.xml"
    frame_skip = 2
    defaults = dict(reward_dist_weight=1, reward_control_weight=1)
    fields = ("qpos", "qvel", "xpos")

    def __init__(self, m, **kwargs):
        super().__init__(m, **kwargs)
        self.tip, self.target = self.body("fingertip"), self.body("target")

    def _vec(self, a):
        return a["xpos"][:, self.tip] - a["xpos"][:, self.target]

    def observe(self, a):
        q = a["qpos"]
        return np.concatenate([np.cos(q[:, :2]), np.sin(q[:, :2]), q[:, 2:], a["qvel"][:, :2],
                               self._vec(a)[:, :2]], axis=1)

    def reward(self, a, before, after, action):
        dist = -np.linalg.norm(self._vec(a), axis=1) * self.p["reward_dist_weight"]
        ctrl = -np.square(action).sum(axis=1) * self.p["reward_control_weight"]
        r = dist + ctrl
        return r, np.zeros(len(r), dtype=bool)

    def reset_state(self, rng, qpos0, qvel0):
        qpos = rng.uniform(low=-0.1, high=0.1, size=len(qpos0)) + qpos0
        while True:
            goal = rng.uniform(low=-0.2, high=0.2, size=2)
            if np.linalg.norm(goal) < 0.2:
                break
        qpos[-2:] = goal
        qvel = qvel0 + rng.uniform(low=-0.005, high=0.005, size=len(qvel0))
        qvel[-2:] = 0
        return qpos, qvel


class Pusher(Task):
    xml_file = "pusher_v5.xml"
    frame_skip = 5
    defaults = dict(reward_near_weight=0.5, reward_dist_weight=1, reward_control_weight=0.1)
    fields = ("qpos", "qvel", "xpos")

    def __init__(self, m, **kwargs):
        super().__init__(m, **kwargs)
        self.tips, self.obj, self.goal = (self.body(n) for n in ("tips_arm", "object", "goal"))

    def observe(self, a):
        x = a["xpos"]
        return np.concatenate([a["qpos"][:, :7], a["qvel"][:, :7], x[:, self.tips],
                               x[:, self.obj], x[:, self.goal]], axis=1)

    def reward(self, a, before, after, action):
        x = a["xpos"]
        near = -np.linalg.norm(x[:, self.obj] - x[:, self.tips], axis=1) \
            * self.p["reward_near_weight"]
        dist = -np.linalg.norm(x[:, self.obj] - x[:, self.goal], axis=1) \
            * self.p["reward_dist_weight"]
        ctrl = -np.square(action).sum(axis=1) * self.p["reward_control_weight"]
        r = dist + ctrl + near
        return r, np.zeros(len(r), dtype=bool)

    def reset_state(self, rng, qpos0, qvel0):
        qpos = qpos0.copy()
        goal = np.asarray([0, 0])
        while True:
            cyl = np.concatenate([rng.uniform(low=-0.3, high=0, size=1),
                                  rng.uniform(low=-0.2, high=0.2, size=1)])
            if np.linalg.norm(cyl - goal) > 0.17:
                break
        qpos[-4:-2] = cyl
        qpos[-2:] = goal
        qvel = qvel0 + rng.uniform(low=-0.005, high=0.005, size=len(qvel0))
        qvel[-4:] = 0
        return qpos, qvel


TASKS = {
    "Ant-v5": Ant, "HalfCheetah-v5": HalfCheetah, "Hopper-v5": Hopper,
    "Walker2d-v5": Walker2d, "Humanoid-v5": Humanoid, "HumanoidStandup-v5": HumanoidStandup,
    "Swimmer-v5": Swimmer, "InvertedPendulum-v5": InvertedPendulum,
    "InvertedDoublePendulum-v5": InvertedDoublePendulum, "Reacher-v5": Reacher,
    "Pusher-v5": Pusher,
}


def asset_path(xml_file: str) -> str:
    """A task's XML file in the installed gymnasium package (read, never copied)."""
    here = os.path.join(os.path.dirname(gymnasium.__file__), "envs", "mujoco", "assets")
    return xml_file if os.path.isabs(xml_file) else os.path.join(here, xml_file)


# ------------------------------------------------------------------------------------
# the vector environment
# ------------------------------------------------------------------------------------


class TiphysVectorEnv(VectorEnv):
    """``num_envs`` environments of one Gymnasium v5 task, one tiphys world each."""

    def __init__(self, task_id: str, num_envs: int, *, xml_file: Optional[str] = None,
                 max_episode_steps: Optional[int] = None,
                 autoreset_mode: AutoresetMode = AutoresetMode.NEXT_STEP, **task_kwargs):
        import tiphys
        if task_id not in TASKS:
            raise ValueError(f"unknown task {task_id!r}; one of {', '.join(TASKS)}")
        if isinstance(num_envs, bool) or not isinstance(num_envs, (int, np.integer)) \
                or num_envs < 1:
            raise ValueError(f"num_envs must be a positive integer, not {num_envs!r}")
        cls = TASKS[task_id]
        self.model = tiphys.load_model(asset_path(xml_file or cls.xml_file))
        self.data = tiphys.make_data(self.model, int(num_envs))
        self.task = cls(self.model, **task_kwargs)
        self.num_envs = int(num_envs)
        self.max_episode_steps = (gymnasium.spec(task_id).max_episode_steps
                                  if max_episode_steps is None else max_episode_steps)
        self.autoreset_mode = AutoresetMode(autoreset_mode)
        self.metadata = {"autoreset_mode": self.autoreset_mode,
                         "render_fps": int(np.round(1.0 / self.task.dt))}
        self.render_mode = None
        lo, hi = np.asarray(self.model.arrays.actuator_ctrlrange, dtype=np.float32).reshape(
            -1, 2).T
        self.single_action_space = Box(low=lo, high=hi, dtype=np.float32)
        self.action_space = batch_space(self.single_action_space, self.num_envs)
        self._qpos0 = np.asarray(self.model.arrays.qpos0, dtype=np.float64).copy()
        self._qvel0 = np.zeros(self.model.nv)
        self._rngs = [seeding.np_random()[0] for _ in range(self.num_envs)]
        self._elapsed = np.zeros(self.num_envs, dtype=np.int64)
        self._autoreset = np.zeros(self.num_envs, dtype=bool)
        self._arrays: dict = {}
        self._reset_worlds(np.ones(self.num_envs, dtype=bool))
        nobs = self.task.observe(self._arrays).shape[1]
        self.single_observation_space = Box(low=-np.inf, high=np.inf, shape=(nobs,),
                                            dtype=np.float64)
        self.observation_space = batch_space(self.single_observation_space, self.num_envs)

    # -- device <-> host -------------------------------------------------------------
    def _fetch(self) -> dict:
        """Host copies of the task's fields (one copy each); capacity overflows counted
        on the device are reported once, as Data.numpy reports them."""
        from .report import report
        d = self.data
        report(d)
        out = {}
        for name in self.task.fields:
            want = d.field_shape(name)
            arr = getattr(d, name).to_numpy()[tuple(slice(0, n) for n in want)]
            out[name] = arr.astype(np.float64, copy=False)
        self._arrays = out
        return out

    def _write(self, name: str, value) -> None:
        _model._set_padded(getattr(self.data, name), np.asarray(value, dtype=np.float64))

    def _reset_worlds(self, mask: np.ndarray) -> None:
        """mj_resetData + reset_model + mj_forward in the worlds of ``mask``; the
        reset worlds' cfrc_ext reads 0 as after Gymnasium's reset (mj_forward does not
        compute it). Refreshes the host arrays."""
        import tiphys
        m, d = self.model, self.data
        worlds = np.flatnonzero(mask)
        if len(worlds) == self.num_envs:
            tiphys.reset_data(m, d)
            qpos = np.empty((self.num_envs, m.nq))
            qvel = np.empty((self.num_envs, m.nv))
        else:
            for w in worlds:
                tiphys.reset_data(m, d, world=int(w))
            qpos, qvel = d.numpy("qpos").copy(), d.numpy("qvel").copy()
        for w in worlds:
            qpos[w], qvel[w] = self.task.reset_state(self._rngs[w], self._qpos0, self._qvel0)
        self._write("qpos", qpos)
        self._write("qvel", qvel)
        # mj_forward runs in every world; the others' next step recomputes what it
        # writes from their state, and their host rows (what Gymnasium's env would read)
        # are kept: after mj_step, kinematics are those of the last substep's start
        kept = self._arrays
        tiphys.forward(m, d)
        a = self._fetch()
        if "cfrc_ext" in a:
            a["cfrc_ext"][worlds] = 0.0
        if len(worlds) < self.num_envs:
            others = ~mask
            for name, value in kept.items():
                a[name][others] = value[others]
        self._elapsed[worlds] = 0

    # -- the VectorEnv API -----------------------------------------------------------
    def reset(self, *, seed=None, options: Optional[dict] = None):
        if seed is not None:
            seeds = [seed + i for i in range(self.num_envs)] if isinstance(seed, int) \
                else list(seed)
            if len(seeds) != self.num_envs:
                raise ValueError(f"reset: {len(seeds)} seeds for {self.num_envs} envs")
            self._rngs = [seeding.np_random(s)[0] for s in seeds]
        mask = np.ones(self.num_envs, dtype=bool)
        if options and "reset_mask" in options:
            mask = np.asarray(options["reset_mask"], dtype=bool)
            if mask.shape != (self.num_envs,):
                raise ValueError(f"reset: reset_mask must have shape ({self.num_envs},)")
        self._reset_worlds(mask)
        self._autoreset[mask] = False
        return self.task.observe(self._arrays), {}

    def step(self, actions):
        import tiphys
        m, d, task = self.model, self.data, self.task
        action = np.asarray(actions, dtype=np.float32)
        if action.shape != (self.num_envs, m.nu):
            raise ValueError(f"step: actions must have shape ({self.num_envs}, {m.nu}), "
                             f"not {action.shape}")
        before = task.position(self._arrays)
        self._write("ctrl", action.astype(np.float64))
        for _ in range(task.frame_skip):
            tiphys.step(m, d)
        tiphys.rne_post_constraint(m, d)
        a = self._fetch()
        after = task.position(a)
        reward, terminated = task.reward(a, before, after, action)
        reward = np.asarray(reward, dtype=np.float64)
        terminated = np.asarray(terminated, dtype=bool)
        obs = task.observe(a)
        self._elapsed += 1
        truncated = self._elapsed >= self.max_episode_steps
        info: dict[str, Any] = {}
        if self.autoreset_mode == AutoresetMode.NEXT_STEP:
            again = self._autoreset.copy()
            if again.any():  # these worlds ended last step: reset instead of stepping
                self._reset_worlds(again)
                obs = task.observe(self._arrays)
                reward[again] = 0.0
                terminated[again] = False
                truncated[again] = False
            self._autoreset = terminated | truncated
        elif self.autoreset_mode == AutoresetMode.SAME_STEP:
            done = terminated | truncated
            if done.any():
                info["final_obs"] = np.where(done[:, None], obs, np.nan)
                info["_final_obs"] = done
                self._reset_worlds(done)
                obs = np.where(done[:, None], task.observe(self._arrays), obs)
        return obs, reward, terminated, truncated, info

    def set_param(self, name: str, value) -> None:
        """Domain randomization: tiphys.set_param on this environment's model, one
        value for every world (the field's shape) or one per world (num_envs, *shape),
        e.g. ``set_param("geom_friction", f)`` with f of shape (num_envs, ngeom, 3);
        on the device, from the next step on (tiphys.PARAM_FIELDS lists the fields)."""
        import tiphys
        tiphys.set_param(self.model, name, value)

    def close_extras(self, **kwargs):
        self.data = None


def make_vec(task_id: str, num_envs: int = 1, **kwargs) -> TiphysVectorEnv:
    """A TiphysVectorEnv of a Gymnasium v5 task (``TASKS``); keywords: the task's
    constructor keywords (as gymnasium.make takes them), ``xml_file``,
    ``max_episode_steps`` (default: Gymnasium's registered limit), ``autoreset_mode``."""
    return TiphysVectorEnv(task_id, num_envs, **kwargs)
