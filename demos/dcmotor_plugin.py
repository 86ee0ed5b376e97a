"""A user-written engine plugin: a DC motor actuator in Taichi, over many worlds.

    python demos/dcmotor_plugin.py [--nworld 4096] [--steps 200] [--arch cpu]

The plugin ``demo.dcmotor`` (registered with ``tiphys.register_plugin``) gives an
actuator a motor current i as its activation: L di/dt = V - R i - kt omega, with V the
control and omega the actuator velocity, and a force kt i. ``plugin_state`` keeps the
heat R i^2 integrated by the ``advance`` hook (starting from e0 at reset). Every hook is
a Taichi kernel over all worlds at once, launched by the step: no Python per world.

The demo steps a three-link arm driven by three such motors in ``--nworld`` worlds,
then the same arm with MuJoCo's built-in first-order actuators (a filter on V with
the motor's time constant L/R, gain kt/R and back-EMF damping -kt^2/R), and prints
both rates: the plugin's cost next to a built-in actuator's.
``benchmarks/bench_plugin.py`` records the same comparison in RESULTS.md.
"""

import argparse
import time

import numpy as np
import taichi as ti

from tiphys import plugin as registry

ND = ti.types.ndarray()


@ti.kernel
def _motor_act_dot(prm: ND, ids: ND, n: ti.i32, ctrl: ND, act: ND, actuator_actadr: ND,
                   actuator_velocity: ND, act_dot: ND):
    for worldid, k in ti.ndrange(act.shape[0], n):
        actid = ids[k]
        adr = actuator_actadr[actid]
        current = act[worldid, adr]
        act_dot[worldid, adr] = (ctrl[worldid, actid] - prm[k, 1] * current -
                                 prm[k, 0] * actuator_velocity[worldid, actid]) / prm[k, 2]


@ti.kernel
def _motor_force(prm: ND, ids: ND, n: ti.i32, act: ND, actuator_actadr: ND,
                 actuator_force: ND):
    for worldid, k in ti.ndrange(act.shape[0], n):
        actid = ids[k]
        actuator_force[worldid, actid] = prm[k, 0] * act[worldid, actuator_actadr[actid]]


@ti.kernel
def _motor_heat(prm: ND, ids: ND, sadr: ND, n: ti.i32, timestep: float, act: ND,
                actuator_actadr: ND, plugin_state: ND):
    for worldid, k in ti.ndrange(act.shape[0], n):
        current = act[worldid, actuator_actadr[ids[k]]]
        plugin_state[worldid, sadr[k]] += timestep * prm[k, 1] * current * current


@ti.kernel
def _motor_reset(prm: ND, sadr: ND, n: ti.i32, world: ti.i32, plugin_state: ND):
    for worldid, k in ti.ndrange(plugin_state.shape[0], n):
        if world < 0 or worldid == world:
            plugin_state[worldid, sadr[k]] = prm[k, 3]


class DCMotor(registry.Plugin):
    """A DC motor: the current i is an activation, L di/dt = V - R i - kt omega with V
    the control and omega the actuator velocity; force = kt i. plugin_state keeps the
    heat R i^2 integrated in ``advance``, starting from e0 at reset."""

    name = "demo.dcmotor"
    capabilities = registry.ACTUATOR
    attributes = ("kt", "r", "l", "e0")

    @classmethod
    def nstate(cls, instance):
        return 1

    @classmethod
    def actuator_actdim(cls, instance, actuator):
        return 1

    @classmethod
    def check(cls, arrays, instance):
        if (instance.value("l") or 0.0) <= 0:
            return "inductance l must be positive"
        for actid in instance.actuators:
            if int(arrays.actuator_actnum[actid]) != 1:
                return f"actuator {actid} needs actdim=\"1\""
        return None

    def __init__(self, m, instances):
        super().__init__(m, instances)
        ids, prm, sadr = [], [], []
        for inst in instances:
            for actid in inst.actuators:
                ids.append(actid)
                prm.append([inst.value(k) or 0.0 for k in self.attributes])
                sadr.append(inst.stateadr)
        self.n = len(ids)
        self.host_arrays = {"ids": np.array(ids, np.int32), "sadr": np.array(sadr, np.int32),
                            "prm": np.array(prm, np.float64).reshape(-1, 4)}

    def act_dot(self, m, d):
        a = self.device(d)
        registry.launch(_motor_act_dot, m, d, prm=a["prm"], ids=a["ids"], n=self.n)

    def compute(self, m, d):
        a = self.device(d)
        registry.launch(_motor_force, m, d, prm=a["prm"], ids=a["ids"], n=self.n)

    def advance(self, m, d):
        a = self.device(d)
        registry.launch(_motor_heat, m, d, prm=a["prm"], ids=a["ids"], sadr=a["sadr"],
                        n=self.n, timestep=float(m.opt.timestep))

    def reset(self, m, d, world=None):
        a = self.device(d)
        registry.launch(_motor_reset, m, d, prm=a["prm"], sadr=a["sadr"], n=self.n,
                        world=-1 if world is None else int(world))


registry.register_plugin(DCMotor)


MOTORS = ((.8, 2.0, .05), (.5, 1.5, .04), (.3, 1.0, .02))  # kt, R, L per joint


def arm_xml(builtin: bool = False) -> str:
    """Three hinged links, each joint driven by a DC motor: the plugin, or (builtin)
    MuJoCo's general actuator with the motor's first-order response."""
    links, acts = "", []
    for k, (kt, r, inductance) in enumerate(MOTORS):
        links += (f'<body pos="0 0 {-.3 if k else 0}"><joint name="j{k}" axis="0 1 0" '
                  f'damping=".01"/><geom type="capsule" fromto="0 0 0 0 0 -.3" size=".03"/>')
        if builtin:
            acts.append(f'<general joint="j{k}" dyntype="filter" dynprm="{inductance / r}" '
                        f'gainprm="{kt / r}" biastype="affine" biasprm="0 0 {-kt * kt / r}"/>')
        else:
            acts.append(f'<plugin joint="j{k}" plugin="demo.dcmotor" actdim="1">'
                        f'<config key="kt" value="{kt}"/><config key="r" value="{r}"/>'
                        f'<config key="l" value="{inductance}"/>'
                        f'<config key="e0" value="0"/></plugin>')
    links += "</body>" * len(MOTORS)
    # an in-place instance's plugin is declared in <extension>, as MuJoCo requires
    extension = "" if builtin else '<extension><plugin plugin="demo.dcmotor"/></extension>'
    return (f'<mujoco><option timestep=".002"/>{extension}<worldbody>{links}</worldbody>'
            f'<actuator>{"".join(acts)}</actuator></mujoco>')


def rate(m, nworld: int, nstep: int) -> tuple[float, float]:
    """World-steps per second and ms per step, with controls set every 10 steps."""
    import tiphys
    d = tiphys.make_data(m, nworld)
    ctrl = np.random.default_rng(0).uniform(-1, 1, (nstep // 10 + 1, nworld, m.nu))
    tiphys.step(m, d)  # compile (or load) the kernels first
    ti.sync()
    t0 = time.perf_counter()
    for t in range(nstep):
        if t % 10 == 0:
            d.ctrl.from_numpy(ctrl[t // 10])
        tiphys.step(m, d)
    ti.sync()
    elapsed = time.perf_counter() - t0
    return nworld * nstep / elapsed, 1e3 * elapsed / nstep


def main(argv=None) -> dict:
    import tiphys
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--nworld", type=int, default=4096)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--arch", default="cpu")
    args = ap.parse_args(argv)
    tiphys.init(arch=args.arch, precision="f64" if args.arch == "cpu" else "f32")
    out = {}
    for label, builtin in (("DC motor plugin", False), ("built-in filter actuator", True)):
        m = tiphys.load_model_from_string(arm_xml(builtin))
        out[label] = rate(m, args.nworld, args.steps)
        print(f"{label:26s} {args.nworld} worlds: {out[label][0]:12.0f} world-steps/s, "
              f"{out[label][1]:.2f} ms per step")
    return out


if __name__ == "__main__":
    main()
