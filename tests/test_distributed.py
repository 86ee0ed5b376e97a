"""tiphys.distributed.RayRollout on a local Ray instance with several workers: the
gathered results equal the single-process rollout world by world."""
import numpy as np
import pytest

import tiphys

ray = pytest.importorskip("ray")  # the test extra installs it (pyproject.toml)

XML = """<mujoco>
  <option timestep="0.005"/>
  <worldbody>
    <geom type="plane" size="3 3 .1"/>
    <body pos="0 0 .3"><freejoint/><geom type="box" size=".1 .08 .06"/>
      <body pos=".15 0 0"><joint name="h" axis="0 1 0"/>
        <geom type="capsule" fromto="0 0 0 .2 0 0" size=".03"/></body></body>
  </worldbody>
  <actuator><motor joint="h" ctrlrange="-1 1"/></actuator>
  <sensor><jointpos joint="h"/><framepos objtype="body" objname="world"/></sensor>
</mujoco>"""


@pytest.fixture(scope="module")
def local_ray():
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False)
    yield
    ray.shutdown()


def test_ray_rollout_equals_one_process_world_by_world(local_ray):
    m = tiphys.load_model_from_string(XML)
    nworld, nstep = 7, 60
    rng = np.random.default_rng(3)
    d = tiphys.make_data(m, nworld)
    state0 = tiphys.get_state(m, d, tiphys.State.FULLPHYSICS)
    nq = m.nq
    state0[:, 1:1 + nq] += rng.uniform(-.05, .05, (nworld, nq))  # after time: qpos
    state0[:, 1:1 + nq][:, 3:7] = [1, 0, 0, 0]
    control = rng.uniform(-1, 1, (nworld, nstep, m.nu))
    want_state, want_sens = tiphys.rollout(m, d, state0, control)
    with tiphys.distributed.RayRollout(xml=XML, nworker=2) as pool:
        assert (pool.nstate, pool.ncontrol, pool.nsensordata) == \
            (state0.shape[1], m.nu, m.nsensordata)
        state, sens = pool.rollout(state0, control)
        np.testing.assert_array_equal(state, want_state)
        np.testing.assert_array_equal(sens, want_sens)
        # one control sequence for all worlds; fewer worlds than workers
        state, _ = pool.rollout(state0[:1], control[0, :5])
        want, _ = tiphys.rollout(m, tiphys.make_data(m, 1), state0[:1], control[0, :5])
        np.testing.assert_array_equal(state, want)
        with pytest.raises(ValueError, match="initial_state must have shape"):
            pool.rollout(state0[:, :3], control)


def test_a_pool_ray_cannot_place_says_so(local_ray):
    with pytest.raises(RuntimeError, match="did not start"):
        tiphys.distributed.RayRollout(xml=XML, nworker=2, num_cpus=3, start_timeout=2)


def test_bad_pool_arguments():
    with pytest.raises(ValueError, match="path or as xml"):
        tiphys.distributed.RayRollout()
    with pytest.raises(ValueError, match="nworker"):
        tiphys.distributed.RayRollout(xml=XML, nworker=0)
