"""Scratch and plans, declared in one place like the Model and Data fields.

Scratch: work arrays a stage keeps on one Data between calls (made on its first run,
sized from that Data), under ``d.scratch.<name>``. Plans: host facts a stage derives
from one model (and its options), made on first use, under ``m.plans.<name>``;
``Model.forget_plans`` (after set_param) replaces the whole Plans, so nothing planned
from the old values survives. A name missing from these tables is an AttributeError,
not a new attribute hung on the model or the data.
"""
from __future__ import annotations

from .config import tag_worlds

# name -> what it holds (and which module makes it)
SCRATCH = {
    "rk4": "RK4's start state, stage rates and sums (integrate.py)",
    "lu": "implicit integrators' LU factors of M - dt*D (integrate.py)",
    "inverse": "mj_inverse's row view and continuous qacc; compare_fwd_inv's forces "
               "(inverse.py)",
    "solver": "the solvers' per-row and per-dof work arrays (solver.py)",
    "hessian": "Newton's sparse Hessian for sparse-Jacobian models: J' by dof, H and its "
               "reverse Cholesky factor L (and Lcone), sized in non-zeros (njnnz, "
               "nhnnz), with per-dof row addresses and buffers (solver.py, hessian.py)",
    "noslip_minvjt": "noslip's M^-1 J' by rows when the solver is not PGS (noslip.py)",
    "derivative": "analytic derivatives' body, dof and qDeriv work arrays (derivative.py)",
    "tactile": "tactile sensors' touching geoms: how many, then which (sensor_acc.py)",
    "geom_pairs": "geom distance sensors' pair lists (sensor.py)",
    "contact_emit": "{capacity: narrowphase output buffers} (collision.py)",
    "epa": "{polytope capacity: (slots, floats per slot, (floats, ints))}: one EPA "
           "polytope (and multiccd clipper) per thread of the ccd launches (epa.py)",
    "poly_ints": "(model, its mesh polygon int arrays that multiccd reads, packed into "
                 "one device array: multiccd.py's pack_poly_ints) (collide_convex.py)",
    "sdf_geom": "(model arrays, each geom's SDF plugin shape and attributes) "
                "(collide_sdf.py)",
    "sdf_descents": "{shape: array}: per (world, candidate slot, start point) the "
                    "result of one SDF descent (collide_sdf.py)",
    "sdf_points": "per world, the contact points of its SDF pair so far "
                  "(collide_sdf.py)",
    "efc_adr": "(rows then first row, sparse row width) of every constraint element "
               "(constraint.py)",
    "flex_sap": "(collision plan, {name: array}): flex self-collision sweeps' per-world "
                "element pair slots and work arrays (collide_flex_elem.py)",
    "con_bodies": "(bodies, weights) of every contact slot's Jacobian: a geom's or flex "
                  "vertex's body, a flex element's vertex bodies (constraint.py)",
    "fd_data": "(model, expanded Data) of finite-difference derivatives "
               "(tiphys/derivative.py)",
    "bound": "(model, field assignment counts, {(kernel, given names): arguments}) "
             "of name-bound launches (bind.py)",
    "callbacks": "{(callback, rows, columns, dtype): device array} of the values the "
                 "actuator and contact-filter callbacks return (callbacks.py)",
    "replay": "{function name: Recording} of step and forward replays (tiphys/replay.py)",
    "skin_pose": "{vertices per skin: (verts, normals)} float32 (nworld, n, 3): a posed "
                 "skin (kernels/ray_skin.py, tiphys.ray.skin_vertices / ray_skin)",
    "sleep": "sleeping trees' poses before kinematics, per-world flags, saved sensor "
             "values and activations, the integrator's acceleration (sleep.py)",
    "reset_world": "{(keyframe, set_param count, row): one world's reset state} of "
                   "reset_data(world=k) (tiphys/model.py)",
}

PLANS = {
    "collision": "CollisionPlan: candidate pairs, detector lists, sweep (kernels/collision_driver.py)",
    "constraint_flags": "(options key, row-type flags) of make_constraint (constraint.py)",
    "rows_possible": "(options, whether any constraint row can exist) (tiphys/forward.py)",
    "actuation": "(options, ActuationPlan: gravity compensation, plugin hooks, user "
                 "actuator ids) (actuation.py)",
    "has_trn_body": "whether an actuator has a body transmission (actuation.py)",
    "tendon_armature": "(options, whether some world's tendon armature is non-zero) "
                       "(smooth.py)",
    "dof_damping_on": "(options, whether some world's dof damping is positive) "
                      "(integrate.py)",
    "sensor": "(options, position/velocity sensor plan) (sensor.py)",
    "subtree_vel_sensors": "whether subtree velocity sensors exist (sensor.py)",
    "sensor_acc": "acceleration and touch sensor plan (sensor_acc.py)",
    "ray_tables": "RayTables: geom and body bounds of mj_ray (ray.py)",
    "sleep_active": "(options, whether a tree can fall asleep) (sleep.py)",
    "renderers": "{(width, height, ...): Renderer} (tiphys/viewer/renderer.py)",
}


class Scratch:
    """One Data's scratch (see SCRATCH); ``tag`` marks a new array with the Data's serial
    load (config.serial_load), as the Data fields are (serial loops for a small load)."""

    __slots__ = tuple(SCRATCH) + ("load",)

    def __init__(self, load: int):
        self.load = int(load)
        for name in SCRATCH:
            setattr(self, name, None)

    def tag(self, array):
        return tag_worlds(array, self.load)


class Plans:
    """One model's host plans (see PLANS), each None until made."""

    __slots__ = tuple(PLANS)

    def __init__(self):
        for name in PLANS:
            setattr(self, name, None)

    def copy(self) -> "Plans":
        """A new Plans holding the same plans (for a copy of the model: what either
        makes later stays its own)."""
        out = Plans()
        for name in PLANS:
            setattr(out, name, getattr(self, name))
        return out
