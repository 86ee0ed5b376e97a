"""The flex engine (kernels/flex.py: mj_flex and flexedge_velocity; kernels/flex_passive.py:
bending, elasticity, edge spring-dampers) against MuJoCo 3.4.0, stage by stage and
over trajectories, for flexes that cannot collide.

Each model runs twice: contacts disabled by <flag contact="disable"/> (the flexes keep
their default contype/conaffinity), and the flexes given contype = conaffinity = 0.
Several worlds in different random states, outputs poisoned with NaN first, f64 on
the CPU; one f32 run in a subprocess. Flex equalities (a constraint row per edge) are
compared row by row; Euler, RK4, implicit and implicitfast trajectories. A flex whose
collisions tiphys does not have yet and an interpolated flex are refused by name
(flex collisions: tests/test_flex_collision.py).
"""
import os
import shutil

import mujoco
import numpy as np
import pytest

import tiphys
from oracle import corpus_dir
import spirv
import subproc
from test_flex_compiler import _GMSH_TETS, _cube_obj, _gmsh41

NWORLD = 3
RTOL = 1e-9
OFF = '<contact contype="0" conaffinity="0"/>'
FLAG = '<option><flag contact="disable"/></option>'


def _fc(name, attrs, inner=""):
    return f'<flexcomp name="{name}" {attrs}>{{C}}{inner}</flexcomp>'


# body XML with {C} where each flex takes its contact element
CASES = {
    # dim 1: a rope pinned at one end, edge stiffness and damping
    "rope": _fc("rope", 'type="grid" count="6 1 1" spacing=".1 .1 .1" dim="1" radius=".01" '
                'mass="1" pos="0 0 1"', '<edge stiffness="30" damping=".3"/><pin id="0"/>'),
    # dim 2: a pinned cloth, edge damping, membrane elasticity with Rayleigh damping
    "cloth": _fc("cloth", 'type="grid" count="4 3 1" spacing=".1 .1 .1" dim="2" '
                 'radius=".01" mass="1" pos="0 0 1"',
                 '<edge damping=".5"/><pin id="0 3"/><elasticity young="1e3" poisson=".2" '
                 'thickness=".01" damping=".001" elastic2d="stretch"/>'),
    # dim 2: bending and stretching (MuJoCo allows no pins with bending), flex damping
    "cloth_bend": _fc("cloth", 'type="grid" count="4 4 1" spacing=".1 .1 .1" dim="2" '
                      'radius=".01" mass="1" pos="0 0 1"',
                      '<edge damping=".2"/><elasticity young="3e2" poisson=".3" '
                      'thickness=".02" damping=".002" elastic2d="both"/>'),
    # dim 3: a soft box, pinned corner, young/poisson elasticity with damping
    "box": _fc("box", 'type="grid" count="3 3 3" spacing=".1 .1 .1" dim="3" radius=".01" '
               'mass="2" pos="0 0 1"',
               '<elasticity young="5e3" poisson=".2" damping=".003"/><pin id="0 1"/>'),
    # dim 3 on a moving body: vertex bodies that are not simple (mj_applyFT path)
    "box_on_body": '<body name="b" pos="0 0 1"><joint type="hinge" axis="1 0 0"/>'
                   '<joint type="slide" axis="0 0 1"/><geom size=".05" contype="0" '
                   'conaffinity="0"/>' + _fc(
                       "box", 'type="grid" count="3 3 3" spacing=".1 .1 .1" dim="3" '
                       'radius=".01" mass="2"', '<elasticity young="5e3" poisson=".2" '
                       'damping=".003"/><pin id="0 1"/>') + '</body>',
    # explicit <flex> on general bodies: a triangle on hinge/ball/free bodies
    "flex_bodies": '<body name="p" pos="0 0 1"><joint type="hinge" axis="0 1 0"/>'
                   '<geom size=".02" mass=".1" contype="0" conaffinity="0"/>'
                   '<body name="q" pos=".2 0 0"><joint type="ball"/>'
                   '<geom size=".02" mass=".1" contype="0" conaffinity="0"/></body></body>'
                   '<body name="r" pos="0 .2 1"><freejoint/>'
                   '<geom size=".02" mass=".1" contype="0" conaffinity="0"/></body>',
    # a mesh flexcomp (dim 3, from an OBJ cube) and a gmsh one (tetrahedra)
    "mesh": _fc("m", 'type="mesh" file="cube.obj" dim="3" origin="0 0 0" radius=".01" '
                'pos="0 0 1"', '<elasticity young="100" poisson=".3" damping=".01"/>'),
    "gmsh": _fc("g", 'type="gmsh" file="m.msh" radius=".001" pos="0 0 1"',
                '<elasticity young="100" poisson=".2" damping=".01"/><pin id="0"/>'),
    # a rigid flex (every vertex on one free body: no edge lengths, Jacobians or forces)
    # next to a soft one on general bodies
    "rigid": '<body name="p" pos="0 0 1"><freejoint/><geom size=".02" contype="0" '
             'conaffinity="0"/></body>' + _fc(
                 "rope", 'type="grid" count="4 1 1" spacing=".1 .1 .1" dim="1" radius=".01" '
                 'mass="1" pos="0 1 1"', '<edge stiffness="5" damping=".1"/>'),
    # flex equalities (mjEQ_FLEX): a row per edge, dense (nv < 60) and sparse Jacobians
    "cloth_eq": _fc("cloth", 'type="grid" count="4 3 1" spacing=".1 .1 .1" dim="2" '
                    'radius=".01" mass="1" pos="0 0 1"',
                    '<edge equality="true" damping=".1"/><pin id="0 3"/>'),
    "cloth_eq_sparse": _fc("cloth", 'type="grid" count="6 6 1" spacing=".1 .1 .1" dim="2" '
                           'radius=".01" mass="1" pos="0 0 1"',
                           '<edge equality="true" damping=".05"/><pin id="0 5"/>'),
    "rope_eq": _fc("rope", 'type="grid" count="6 1 1" spacing=".1 .1 .1" dim="1" '
                   'radius=".01" mass="1" pos="0 0 1"', '<pin id="0"/>'),
}
# sections after <worldbody>, {C} as above
AFTER = {
    "rigid": '<deformable><flex name="r" dim="2" body="p" vertex="0 0 0 .1 0 0 0 .1 0" '
             'element="0 1 2" radius=".01">{C}</flex></deformable>',
    "rope_eq": '<equality><flex flex="rope" solref=".01 1" solimp=".9 .95 .01"/></equality>',
    "flex_bodies": '<deformable><flex name="tri" dim="2" body="p q r" '
                   'vertex="0 0 0 0 0 0 0 0 0" element="0 1 2" radius=".01">{C}'
                   '<edge damping=".1"/><elasticity young="50" poisson=".3" thickness=".01" '
                   'damping=".01"/></flex>'
                   '<flex name="rope" dim="1" body="p q" vertex="0 0 0 0 0 0" element="0 1" '
                   'radius=".01">{C}<edge stiffness="20" damping=".2"/></flex></deformable>',
}


def _xml(case, variant):
    body = CASES[case].replace("{C}", OFF if variant == "contype" else "")
    deform = AFTER.get(case, "").replace("{C}", OFF if variant == "contype" else "")
    return (f'<mujoco><compiler autolimits="true"/>{FLAG if variant == "flag" else ""}'
            f'<worldbody><geom type="plane" size="2 2 .1"/>{body}</worldbody>{deform}'
            f'</mujoco>')


def _write_assets(tmp):
    (tmp / "cube.obj").write_bytes(_cube_obj(False))
    (tmp / "m.msh").write_bytes(_gmsh41(_GMSH_TETS, 3))


def _floppy(tmp, variant):
    """The corpus's mjwarp/flex/floppy.xml (two soft bodies, contype=conaffinity=0 by
    its author) copied; the flag variant restores the default contype/conaffinity and
    disables contacts by the option flag instead."""
    src = os.path.join(corpus_dir(), "mjwarp", "flex")
    if not os.path.isfile(os.path.join(src, "floppy.xml")):
        pytest.skip("corpus not fetched (make corpus)")
    shutil.copy(os.path.join(src, "scene.xml"), tmp / "scene.xml")
    text = open(os.path.join(src, "floppy.xml"), encoding="utf-8").read()
    if variant == "flag":
        text = text.replace(' conaffinity="0" contype="0"', "")
        text = text.replace("<option ", '<option><flag contact="disable"/></option><option ', 1)
    path = tmp / "floppy.xml"
    path.write_text(text)
    return str(path)


def load_pair(case, variant, tmp):
    if case == "floppy":
        path = _floppy(tmp, variant)
    else:
        _write_assets(tmp)
        path = str(tmp / f"{case}.xml")
        with open(path, "w") as f:
            f.write(_xml(case, variant))
    # (MuJoCo 3.4.0's flexcomp reads its file from disk, hence files for both)
    return tiphys.load_model(path), mujoco.MjModel.from_xml_path(path)


MODELS = sorted(CASES) + ["floppy"]
VARIANTS = ("flag", "contype")

STAGE_POS = ("flexvert_xpos", "flexelem_aabb", "flexedge_length", "flexedge_J")
STAGE_VEL = ("flexedge_velocity", "qfrc_spring", "qfrc_damper", "qfrc_passive")


def poison(d, names):
    for name in names:
        arr = getattr(d, name)
        value = arr.to_numpy()
        arr.from_numpy(np.full(value.shape, np.nan if value.dtype.kind == "f" else -7,
                               dtype=value.dtype))


def random_state(mjm, nworld, rng, scale=0.02):
    qpos = np.tile(mjm.qpos0, (nworld, 1)) + rng.uniform(-scale, scale, (nworld, mjm.nq))
    for w in range(nworld):  # normalise quaternions (free and ball joints)
        for j in range(mjm.njnt):
            adr = mjm.jnt_qposadr[j]
            if mjm.jnt_type[j] == mujoco.mjtJoint.mjJNT_FREE:
                adr += 3
            if mjm.jnt_type[j] in (mujoco.mjtJoint.mjJNT_FREE, mujoco.mjtJoint.mjJNT_BALL):
                qpos[w, adr:adr + 4] /= np.linalg.norm(qpos[w, adr:adr + 4])
    return qpos, rng.normal(size=(nworld, mjm.nv)) * 0.3


def set_state(d, qpos, qvel):
    for name, value in (("qpos", qpos), ("qvel", qvel)):
        arr = getattr(d, name)
        full = arr.to_numpy()
        full[:, :value.shape[1]] = value
        arr.from_numpy(full)


def dense_j(rownnz, rowadr, colind, values, nedge, nv):
    J = np.zeros((nedge, nv))
    for e in range(nedge):
        for j in range(rowadr[e], rowadr[e] + rownnz[e]):
            J[e, colind[j]] = values[j]
    return J


def mujoco_j(mjm, md):
    if mujoco.mj_isSparse(mjm):
        return dense_j(md.flexedge_J_rownnz, md.flexedge_J_rowadr,
                       np.ravel(md.flexedge_J_colind), np.ravel(md.flexedge_J),
                       mjm.nflexedge, mjm.nv)
    return np.asarray(md.flexedge_J).reshape(mjm.nflexedge, mjm.nv)


def ours_j(m, d, w):
    return dense_j(*(d.numpy(k)[w] for k in ("flexedge_J_rownnz", "flexedge_J_rowadr",
                                            "flexedge_J_colind", "flexedge_J")),
                   m.nflexedge, m.nv)


def rel_err(got, want):
    got = np.asarray(got, dtype=np.float64).reshape(np.shape(want))
    assert not np.isnan(got).any(), "not written (NaN)"
    scale = max(1.0, float(np.abs(want).max(initial=0.0)))
    return float(np.abs(got - want).max(initial=0.0)) / scale


def stage_errors(m, mjm, seed=0, nworld=NWORLD):
    """Per field, the largest relative error over the worlds: tiphys's kinematics,
    com_pos, flex, then flex_velocity, com_vel, passive against MuJoCo's."""
    rng = np.random.default_rng(seed)
    qpos, qvel = random_state(mjm, nworld, rng)
    d = tiphys.make_data(m, nworld)
    set_state(d, qpos, qvel)
    poison(d, STAGE_POS + STAGE_VEL + ("flexedge_J_rownnz", "flexedge_J_rowadr",
                                      "flexedge_J_colind"))
    tiphys.kinematics(m, d)
    tiphys.com_pos(m, d)
    tiphys.flex(m, d)
    pos = {name: d.numpy(name).copy() for name in STAGE_POS}
    # edges of rigid flexes have no length (MuJoCo computes none; both keep 0 from
    # make_data): unwritten here, as there
    rigid = np.zeros(m.nflexedge, dtype=bool)
    for f in range(mjm.nflex):
        if mjm.flex_rigid[f]:
            rigid[mjm.flex_edgeadr[f]:mjm.flex_edgeadr[f] + mjm.flex_edgenum[f]] = True
    pos["flexedge_length"][:, rigid] = 0.0
    tiphys.flex_velocity(m, d)
    tiphys.com_vel(m, d)
    tiphys.passive(m, d)
    vel = {name: d.numpy(name) for name in STAGE_VEL}
    md = mujoco.MjData(mjm)
    errors = {}
    for w in range(nworld):
        md.qpos[:] = qpos[w]
        md.qvel[:] = qvel[w]
        mujoco.mj_kinematics(mjm, md)
        mujoco.mj_comPos(mjm, md)
        mujoco.mj_flex(mjm, md)
        want = {name: np.array(getattr(md, name)) for name in STAGE_POS[:3]}
        want["flexedge_J"] = mujoco_j(mjm, md)
        if mujoco.mj_isSparse(mjm):  # the sparse structure itself, row by row
            rownnz = d.numpy("flexedge_J_rownnz")[w]
            np.testing.assert_array_equal(rownnz, md.flexedge_J_rownnz)
            cols = d.numpy("flexedge_J_colind")[w]
            adr = d.numpy("flexedge_J_rowadr")[w]
            theirs = np.ravel(md.flexedge_J_colind)
            for e in range(mjm.nflexedge):
                a, b = adr[e], md.flexedge_J_rowadr[e]
                np.testing.assert_array_equal(cols[a:a + rownnz[e]],
                                              theirs[b:b + rownnz[e]])
        mujoco.mj_fwdPosition(mjm, md)
        mujoco.mj_fwdVelocity(mjm, md)
        for name in STAGE_VEL:
            want[name] = np.array(getattr(md, name))
        for name, value in want.items():
            got = ours_j(m, d, w) if name == "flexedge_J" else (
                pos[name][w] if name in pos else vel[name][w])
            errors[name] = max(errors.get(name, 0.0), rel_err(got, value))
    return errors


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("case", MODELS)
def test_flex_stages_match_mujoco(case, variant, tmp_path):
    m, mjm = load_pair(case, variant, tmp_path)
    assert mjm.nflex > 0 and m.nflex == mjm.nflex
    errors = stage_errors(m, mjm)
    print(case, variant, {k: f"{v:.1e}" for k, v in errors.items()})
    bad = {k: v for k, v in errors.items() if not v <= RTOL}
    assert not bad, bad


EFC = ("efc_type", "efc_id", "efc_pos", "efc_margin", "efc_diagApprox", "efc_KBIP",
       "efc_D", "efc_R", "efc_vel", "efc_aref")


@pytest.mark.parametrize("case", ["cloth_eq", "cloth_eq_sparse", "rope_eq"])
def test_flex_equality_rows_match_mujoco(case, tmp_path):
    """make_constraint's rows of flex equalities (one per non-rigid edge: pos = length -
    length0, the edge's Jacobian row, diagApprox from flexedge_invweight0), mj_island's
    islands over them (every row its own edge) and the solver's forces."""
    from tiphys.support import efc_J_dense
    m, mjm = load_pair(case, "contype", tmp_path)
    rng = np.random.default_rng(5)
    qpos, qvel = random_state(mjm, NWORLD, rng)
    d = tiphys.make_data(m, NWORLD)
    set_state(d, qpos, qvel)
    tiphys.forward(m, d)
    J = efc_J_dense(m, d)
    md = mujoco.MjData(mjm)
    for w in range(NWORLD):
        md.qpos[:] = qpos[w]
        md.qvel[:] = qvel[w]
        mujoco.mj_forward(mjm, md)
        n = md.nefc
        assert n > 0 and d.numpy("nefc")[w] == n and d.numpy("ne")[w] == md.ne
        if mujoco.mj_isSparse(mjm):
            want = dense_j(md.efc_J_rownnz, md.efc_J_rowadr, np.ravel(md.efc_J_colind),
                           np.ravel(md.efc_J), n, mjm.nv)
            np.testing.assert_array_equal(d.numpy("efc_J_rownnz")[w][:n], md.efc_J_rownnz)
        else:
            want = np.asarray(md.efc_J).reshape(n, mjm.nv)
        assert rel_err(J[w, :n, :mjm.nv], want) <= RTOL
        for name in EFC:
            assert rel_err(d.numpy(name)[w][:n], np.array(getattr(md, name))[:n]) <= RTOL, name
        assert d.numpy("nisland")[w] == md.nisland
        np.testing.assert_array_equal(d.numpy("tree_island")[w], md.tree_island)
        for name in ("efc_force", "qfrc_constraint", "qacc"):
            want = np.array(getattr(md, name))
            got = d.numpy(name)[w][:want.size]
            assert rel_err(got, want) <= 1e-8, name


def trajectory(m, mjm, nstep, nworld=2, seed=1):
    rng = np.random.default_rng(seed)
    qpos, qvel = random_state(mjm, nworld, rng, scale=0.01)
    d = tiphys.make_data(m, nworld)
    set_state(d, qpos, qvel)
    for _ in range(nstep):
        tiphys.step(m, d)
    md = mujoco.MjData(mjm)
    err = {"qpos": 0.0, "qvel": 0.0}
    for w in range(nworld):
        mujoco.mj_resetData(mjm, md)
        md.qpos[:] = qpos[w]
        md.qvel[:] = qvel[w]
        for _ in range(nstep):
            mujoco.mj_step(mjm, md)
        for name in err:
            err[name] = max(err[name], rel_err(d.numpy(name)[w], np.array(getattr(md, name))))
    return err


TRAJ_STEPS = {"floppy": 20}


@pytest.mark.parametrize("variant", VARIANTS)
@pytest.mark.parametrize("case", MODELS)
def test_flex_trajectory_matches_mujoco(case, variant, tmp_path):
    m, mjm = load_pair(case, variant, tmp_path)
    err = trajectory(m, mjm, TRAJ_STEPS.get(case, 100))
    print(case, variant, {k: f"{v:.1e}" for k, v in err.items()})
    assert err["qpos"] <= 1e-9 and err["qvel"] <= 1e-8, err


def test_flex_energy_matches_mujoco(tmp_path):
    """mj_energyPos's edge springs of 1D flexes (the rope) and the kinetic energy."""
    m, mjm = load_pair("rope", "contype", tmp_path)
    m.opt.enableflags |= int(mujoco.mjtEnableBit.mjENBL_ENERGY)
    mjm.opt.enableflags |= int(mujoco.mjtEnableBit.mjENBL_ENERGY)
    rng = np.random.default_rng(3)
    qpos, qvel = random_state(mjm, NWORLD, rng, scale=0.05)
    d = tiphys.make_data(m, NWORLD)
    set_state(d, qpos, qvel)
    tiphys.forward(m, d)
    md = mujoco.MjData(mjm)
    for w in range(NWORLD):
        md.qpos[:] = qpos[w]
        md.qvel[:] = qvel[w]
        mujoco.mj_forward(mjm, md)
        assert rel_err(d.numpy("energy")[w], np.array(md.energy)) <= RTOL


@pytest.mark.parametrize("arch", spirv.cpu_and_cuda())
def test_flex_f32_steps_close_to_mujoco(arch, tmp_path):
    """f32 on the CPU, and on CUDA where present (a subprocess: the precision is per
    process): the soft box's and the cloth with edge equalities' stages and short
    trajectories."""
    script = f"""
import sys, pathlib
sys.path.insert(0, {os.path.dirname(os.path.abspath(__file__))!r})
import numpy as np, tiphys
tiphys.init(arch={arch!r}, precision="f32")
import test_flex_engine as t
tmp = pathlib.Path({str(tmp_path)!r})
out = {{}}
for case in ("box", "cloth_eq"):
    m, mjm = t.load_pair(case, "contype", tmp)
    errors = t.stage_errors(m, mjm)
    assert all(v < 1e-4 for v in errors.values()), (case, errors)
    err = t.trajectory(m, mjm, 20)
    assert err["qpos"] < 1e-4 and err["qvel"] < 1e-2, (case, err)
    out[case] = (max(errors.values()), err)
print("OK", out)
"""
    res = subproc.run(["-c", script], key=f"{arch}-f32")
    assert res.returncode == 0 and "OK" in res.stdout, (res.stdout + res.stderr)[-3000:]
    print(res.stdout.strip().splitlines()[-1])


# ------------------------------------------------------------------ refusals

def test_colliding_flex_is_refused_naming_it(tmp_path):
    """A flex whose collisions tiphys does not have yet (passive contacts;
    tests/test_flex_collision.py has the rest)."""
    xml = ('<mujoco><worldbody><flexcomp name="soft" type="grid" count="3 3 3" '
           'spacing=".1 .1 .1" dim="3" radius=".01"><contact passive="true"/></flexcomp>'
           '</worldbody></mujoco>')
    m = tiphys.load_model_from_string(xml)
    with pytest.raises(NotImplementedError, match="flex collisions.*'soft'.*not supported yet"):
        tiphys.make_data(m, 1)
    with pytest.raises(NotImplementedError, match="flex collisions.*'soft'"):
        tiphys.put_model(mujoco.MjModel.from_xml_string(xml))


def test_enabling_contacts_after_make_data_is_refused(tmp_path):
    """A flex that collides once contacts are enabled again cannot step without its
    contacts: the flex stage checks the options it runs under."""
    xml = ('<mujoco><option><flag contact="disable"/></option><worldbody>'
           '<flexcomp name="box" type="grid" count="3 3 3" spacing=".1 .1 .1" dim="3" '
           'radius=".01" mass="1"><contact passive="true"/></flexcomp></worldbody></mujoco>')
    m = tiphys.load_model_from_string(xml)
    d = tiphys.make_data(m, 1)
    tiphys.step(m, d)
    m.opt.disableflags &= ~int(mujoco.mjtDisableBit.mjDSBL_CONTACT)
    with pytest.raises(NotImplementedError, match="flex collisions.*'box'"):
        tiphys.step(m, d)


def test_interpolated_flex_is_refused():
    xml = ('<mujoco><worldbody><flexcomp name="soft" type="grid" count="4 4 4" '
           'spacing=".1 .1 .1" dim="3" radius=".01" dof="trilinear">'
           '<contact contype="0" conaffinity="0" selfcollide="none"/>'
           '</flexcomp></worldbody></mujoco>')
    with pytest.raises(NotImplementedError, match="interpolated flexes.*'soft'"):
        tiphys.make_data(tiphys.load_model_from_string(xml), 1)


@pytest.mark.parametrize("integrator", ["implicitfast", "implicit", "RK4"])
@pytest.mark.parametrize("case", ["rope", "cloth_bend", "box_on_body", "cloth_eq"])
def test_flex_trajectory_with_other_integrators(case, integrator, tmp_path):
    """implicitfast and implicit (qDeriv with the flex edge damping on qM's pattern, as
    MuJoCo's addJTBJ keeps it) and RK4."""
    m, mjm = load_pair(case, "contype", tmp_path)
    m.opt.integrator = {"implicitfast": 3, "implicit": 2, "RK4": 1}[integrator]
    mjm.opt.integrator = m.opt.integrator
    err = trajectory(m, mjm, 50)
    print(case, integrator, {k: f"{v:.1e}" for k, v in err.items()})
    assert err["qpos"] <= 1e-9 and err["qvel"] <= 1e-8, err


def test_jacobianless_flex_between_two_others_as_mujocos_dense_mode():
    """MuJoCo 3.4.0's sparse mj_flex restarts its row addresses at 0 after a flex without
    Jacobian rows (rowadr[e] = rowadr[e-1] + rownnz[e-1], both 0 there), so the third
    rope's rows overwrite the first's and the first rope's edge forces land on the
    third's dofs. tiphys keeps every row: it matches MuJoCo's dense mode (the same
    model with jacobian="dense"), which has no such recurrence."""
    def rope(name, y, inner):
        return (f'<flexcomp name="{name}" type="grid" count="12 1 1" spacing=".1 .1 .1" '
                f'dim="1" radius=".01" mass="1" pos="0 {y} 1">{OFF}{inner}</flexcomp>')
    body = (rope("a", 0, '<edge stiffness="30" damping=".3"/>') + rope("b", .5, "") +
            rope("c", 1, '<edge stiffness="10" damping=".1"/>'))
    xml = f"<mujoco><worldbody>{body}</worldbody></mujoco>"
    m = tiphys.load_model_from_string(xml)
    dense = mujoco.MjModel.from_xml_string(xml.replace(
        "<worldbody>", '<option jacobian="dense"/><worldbody>'))
    assert mujoco.mj_isSparse(mujoco.MjModel.from_xml_string(xml)) and \
        not mujoco.mj_isSparse(dense)
    qpos, qvel = random_state(dense, NWORLD, np.random.default_rng(2))
    d = tiphys.make_data(m, NWORLD)
    set_state(d, qpos, qvel)
    tiphys.forward(m, d)
    md = mujoco.MjData(dense)
    for w in range(NWORLD):
        md.qpos[:] = qpos[w]
        md.qvel[:] = qvel[w]
        mujoco.mj_forward(dense, md)
        assert rel_err(d.numpy("qfrc_passive")[w], np.array(md.qfrc_passive)) <= RTOL
        assert rel_err(d.numpy("qacc")[w], np.array(md.qacc)) <= RTOL


@pytest.mark.parametrize("case", ["cloth_bend", "cloth_eq"])
def test_flex_inverse_matches_mujoco(case, tmp_path):
    """mj_inverse on flex models: the flex stages, passive forces and (flex equality)
    constraint forces of a given qacc."""
    m, mjm = load_pair(case, "contype", tmp_path)
    rng = np.random.default_rng(7)
    qpos, qvel = random_state(mjm, NWORLD, rng)
    qacc = rng.normal(size=(NWORLD, mjm.nv))
    d = tiphys.make_data(m, NWORLD)
    set_state(d, qpos, qvel)
    d.qacc.from_numpy(qacc)
    tiphys.inverse(m, d)
    md = mujoco.MjData(mjm)
    for w in range(NWORLD):
        md.qpos[:] = qpos[w]
        md.qvel[:] = qvel[w]
        md.qacc[:] = qacc[w]
        mujoco.mj_inverse(mjm, md)
        assert rel_err(d.numpy("qfrc_inverse")[w], np.array(md.qfrc_inverse)) <= 1e-8
