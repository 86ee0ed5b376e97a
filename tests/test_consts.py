"""kernels/consts.py against the mujoco package: every enum member, number and name table."""
import mujoco
import pytest

import tiphys
from tiphys.compiler.options import DISABLE_FLAGS, ENABLE_FLAGS
from tiphys.kernels import consts

# the mujoco enums consts.py carries, in full: a member MuJoCo adds or renumbers fails here
ENUMS = ("mjtGeom", "mjtJoint", "mjtObj", "mjtEq", "mjtTrn", "mjtDyn", "mjtGain", "mjtBias",
         "mjtWrap", "mjtSensor", "mjtStage", "mjtDataType", "mjtConstraint",
         "mjtConstraintState", "mjtIntegrator", "mjtCone", "mjtJacobian", "mjtSolver",
         "mjtWarning", "mjtDisableBit", "mjtEnableBit", "mjtSameFrame", "mjtCamLight",
         "mjtLightType", "mjtTexture", "mjtColorSpace", "mjtBuiltin", "mjtMark",
         "mjtTextureRole", "mjtLimited", "mjtAlignFree", "mjtInertiaFromGeom", "mjtLRMode",
         "mjtState")
# numbers with a mujoco.mjXXX twin (mjEPS is not in the Python bindings)
NUMBERS = ("MINVAL", "MAXVAL", "PI", "MINIMP", "MAXIMP", "MINMU", "MAXCONPAIR", "NGROUP",
           "NSOLVER", "NEQDATA", "NDYN", "NGAIN", "NBIAS")
NOT_IN_BINDINGS = {"EPS": 1e-14}  # mjEPS (user_util.h)


def _members(enum_name):
    return {name[2:]: int(value)
            for name, value in getattr(mujoco, enum_name).__members__.items()}


@pytest.mark.parametrize("enum_name", ENUMS)
def test_enum_members_equal_mujoco(enum_name):
    theirs = _members(enum_name)
    ours = {name: getattr(consts, name, None) for name in theirs}
    assert ours == theirs


@pytest.mark.parametrize("name", NUMBERS)
def test_numbers_equal_mujoco(name):
    value = getattr(consts, name)
    assert value == getattr(mujoco, "mj" + name)
    assert type(value) is type(getattr(mujoco, "mj" + name))  # 1e10 stays a float


def test_every_constant_is_checked():
    """Each int/float in consts is a member of a checked enum or a checked number: a
    constant added without its MuJoCo twin fails here."""
    checked = set(NUMBERS) | set(NOT_IN_BINDINGS)
    for enum_name in ENUMS:
        checked |= set(_members(enum_name))
    numbers = {name for name, value in vars(consts).items()
               if not name.startswith("_") and type(value) in (int, float)}
    assert numbers - checked == set()
    assert all(getattr(consts, k) == v for k, v in NOT_IN_BINDINGS.items())


def test_constants_are_plain_python_numbers():
    """Taichi folds module-level Python ints and floats into kernels as constants; an
    IntEnum or numpy scalar would not be the same thing."""
    for name, value in vars(consts).items():
        if name.isupper() and not isinstance(value, tuple):
            assert type(value) in (int, float), name


def test_name_tables_follow_enum_order():
    assert consts.GEOM_TYPE_NAMES == tuple(
        mujoco.mjtGeom(t).name[len("mjGEOM_"):].lower() for t in range(int(mujoco.mjtGeom.mjNGEOMTYPES)))
    assert consts.JOINT_TYPE_NAMES == tuple(
        m.name[len("mjJNT_"):].lower() for m in mujoco.mjtJoint.__members__.values())
    assert consts.WARNING_NAMES == tuple(
        mujoco.mjtWarning(w).name[len("mjWARN_"):].lower() for w in range(int(mujoco.mjtWarning.mjNWARNING)))


def test_mjcf_flag_names_follow_bit_order():
    assert DISABLE_FLAGS == tuple(s.lower() for s in mujoco.mjDISABLESTRING)
    assert ENABLE_FLAGS == tuple(s.lower() for s in mujoco.mjENABLESTRING)
    for i, name in enumerate(DISABLE_FLAGS):
        assert getattr(consts, "DSBL_" + name.upper()) == 1 << i
    for i, name in enumerate(ENABLE_FLAGS):
        assert getattr(consts, "ENBL_" + name.upper()) == 1 << i


def test_state_flags_equal_mujoco():
    assert {name: int(v) for name, v in tiphys.State.__members__.items()} == {
        name[len("mjSTATE_"):]: int(v) for name, v in mujoco.mjtState.__members__.items()
        if name.startswith("mjSTATE_")}
