"""Open-loop gait control: the one kernel of the demo controller that ``tiphys run``,
``tiphys render`` and ``tiphys view`` drive a model with (tiphys/scenes/gait.py holds
the gait's parameters and the driver).

ctrl[w, u] = offset[u] + amp[u] sin(omega[u] time[w] + phase[u] + world_phase[w]),
computed on the device from d.time: nothing is copied between the host and the
device per step.
"""
import taichi as ti

ND = ti.types.ndarray()


@ti.kernel
def gait_ctrl(nu: ti.i32, time: ND, world_phase: ND, offset: ND, amp: ND, omega: ND,
              phase: ND, ctrl: ND):
    for worldid, actid in ti.ndrange(ctrl.shape[0], nu):
        ctrl[worldid, actid] = offset[actid] + amp[actid] * ti.sin(
            omega[actid] * time[worldid] + phase[actid] + world_phase[worldid])
