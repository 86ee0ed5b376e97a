"""tiphys: a MuJoCo-compatible physics engine on Taichi, batched over many worlds."""
import os as _os

# Taichi prints a "[Taichi] version ..." banner on import; a library (and every CLI
# command, --help included) should not. ENABLE_TAICHI_HEADER_PRINT=1 brings it back.
_os.environ.setdefault("ENABLE_TAICHI_HEADER_PRINT", "0")

from .api import (compile_model, copy_model, load_model, load_model_from_string, load_spec,
                  put_model, recompile)
from .backend import init
from .errors import ModelError
from .io import Resource, ResourceProvider, get_provider, register_provider
from .kernels.flex import flex, flex_velocity
from .kernels.smooth import camlight, com_pos, kinematics
from .model import Data, Model, id2name, make_data, name2id, reset_data
from .spec import Spec, parse_xml
from .kernels.smooth import (add_m, com_vel, crb, factor_m, full_m, mul_m, mul_m2, rne,
                             solve_m, solve_m2)
from .kernels.passive import passive
from .kernels.forward import fwd_acceleration
from .kernels.integrate import euler
from .forward import forward, step
from .kernels.tendon import tendon
from .kernels.actuation import actuation, advance_activation, transmission, velocity
from .kernels.passive import tendon_passive
from .forward import compare_fwd_inv, inverse, step1, step2
from .kernels.collision_driver import add_contact, collision
from .kernels.geom_distance import geom_distance
from .kernels.constraint import make_constraint, reference_constraint
from .kernels.island import island
from .kernels.jac import apply_ft, jac, jac_body, jac_body_com, jac_geom, jac_site, jac_subtree_com
from .kernels.solver import solve, solver_stats
from .kernels.rne_post import contact_force, rne_post_constraint
from .ray import (multi_ray, ray, ray_batch, ray_flex, ray_geom, ray_hfield, ray_mesh,
                  ray_skin, skin_vertices)
from .derivative import inverse_fd, quat_integrate_deriv, sub_quat_deriv, transition_fd
from .viewer import Viewer, render
from .forward import forward_skip, inverse_skip
from .state import State, copy_state, extract_state, get_state, set_keyframe, set_state, state_size
from .support import (angmom_mat, check_acc, check_pos, check_vel, differentiate_pos,
                      get_total_mass, integrate_pos, jac_dot, jac_point_axis, local2global,
                      mul_jac_t_vec, mul_jac_vec, normalize_quat, object_acceleration,
                      object_velocity, set_total_mass)
from .printing import print_data, print_model, print_schema
from .params import PARAM_FIELDS, get_param, param_shape, set_param
from .setconst import set_const
from .copyback import copy_back
from .components import (constraint_update, fwd_kinematics, fwd_position, fwd_velocity,
                         implicit, inv_constraint, inv_position, inv_velocity,
                         project_constraint, runge_kutta)
from .kernels.sensor import (apply_cutoff, sensor_pos, sensor_vel, set_sensor_callback,
                             subtree_vel)
from .kernels.sensor_acc import sensor_acc
from .kernels.callbacks import (reset_callbacks, set_act_bias_callback, set_act_dyn_callback,
                                set_act_gain_callback, set_contactfilter_callback,
                                set_control_callback, set_passive_callback)
from .kernels.energy import energy_pos, energy_vel
from .report import check_warnings
from .rollout import rollout
from .saved import save_model
from . import named as _named  # noqa: F401  (d.body("torso"), m.geom("floor"), ...)
from . import plugin
from . import distributed  # noqa: F401  (RayRollout: optional Ray)
from .plugin import register_plugin

__version__ = "0.1.0"

__all__ = [
    "init", "load_model", "load_model_from_string", "load_spec", "compile_model",
    "put_model", "copy_model", "recompile", "set_const", "copy_back", "make_data", "reset_data", "kinematics", "com_pos", "camlight",
    "flex", "flex_velocity",
    "name2id", "id2name", "Model", "Data", "Spec", "parse_xml", "ModelError",
    "Resource", "ResourceProvider", "register_provider", "get_provider", "plugin",
    "register_plugin",
    "crb", "factor_m", "solve_m", "mul_m", "full_m", "mul_m2", "solve_m2", "add_m", "com_vel", "rne", "passive",
    "fwd_acceleration", "euler", "forward", "step",
    "step1", "step2", "inverse", "jac", "jac_body", "jac_body_com", "jac_site", "jac_geom",
    "jac_subtree_com", "apply_ft",
    "tendon", "transmission", "velocity", "actuation", "advance_activation", "tendon_passive",
    "collision", "add_contact", "geom_distance", "make_constraint", "reference_constraint", "island",
    "solve",
    "solver_stats", "compare_fwd_inv",
    "rne_post_constraint", "contact_force",
    "ray", "multi_ray", "ray_batch", "ray_geom", "ray_mesh", "ray_hfield", "ray_flex",
    "ray_skin", "skin_vertices",
    "transition_fd", "inverse_fd", "sub_quat_deriv", "quat_integrate_deriv",
    "Viewer", "render",
    "forward_skip", "inverse_skip", "State", "state_size", "get_state", "set_state",
    "extract_state", "copy_state", "set_keyframe", "jac_dot", "jac_point_axis",
    "angmom_mat", "object_velocity", "object_acceleration", "local2global",
    "differentiate_pos", "integrate_pos", "normalize_quat", "get_total_mass",
    "set_total_mass", "mul_jac_vec", "mul_jac_t_vec", "check_pos", "check_vel",
    "check_acc", "print_model", "print_data", "print_schema", "fwd_kinematics", "fwd_position",
    "fwd_velocity", "runge_kutta", "implicit", "inv_position", "inv_velocity",
    "inv_constraint", "constraint_update", "project_constraint",
    "sensor_pos", "sensor_vel", "sensor_acc", "energy_pos", "energy_vel",
    "set_sensor_callback", "set_control_callback", "set_passive_callback",
    "set_act_dyn_callback", "set_act_gain_callback", "set_act_bias_callback",
    "set_contactfilter_callback",
    "reset_callbacks", "apply_cutoff", "subtree_vel", "check_warnings",
    "set_param", "get_param", "param_shape", "PARAM_FIELDS", "rollout",
    "save_model",
]


def _check_entries() -> None:
    """Every exported ``func(m, d, ...)`` first checks, on the host and by identity,
    that ``d`` was made from ``m`` (model.check_pair): Data of another model that
    happens to have the same sizes must not run."""
    import functools
    import inspect

    from .model import check_pair, checks_model_data

    namespace = globals()
    for name in __all__:
        obj = namespace[name]
        if not inspect.isfunction(obj):
            continue
        params = list(inspect.signature(obj).parameters)
        if params[:2] == ["m", "d"]:
            namespace[name] = checks_model_data(obj)
        elif params[:3] == ["m", "src", "dst"]:
            def pair_entry(func):
                @functools.wraps(func)
                def entry(m, src, dst, *args, **kwargs):
                    check_pair(m, src, func.__name__ + " (src)")
                    check_pair(m, dst, func.__name__ + " (dst)")
                    return func(m, src, dst, *args, **kwargs)
                entry._tiphys_checks_pair = True
                return entry
            namespace[name] = pair_entry(obj)


_check_entries()
