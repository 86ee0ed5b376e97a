"""MuJoCo's enums and numeric constants, the one place tiphys declares them.

Names are MuJoCo's without the ``mj`` prefix: ``mjGEOM_BOX`` is ``GEOM_BOX``,
``mjDSBL_CONSTRAINT`` is ``DSBL_CONSTRAINT``, ``mjMINVAL`` is ``MINVAL``, ``mjNGEOMTYPES``
is ``NGEOMTYPES``. Values are MuJoCo 3.4.0's (mjmodel.h, mjdata.h, mjtnum.h);
tests/test_consts.py checks every member of each enum against the ``mujoco`` package.

All are plain Python ints and floats. Taichi reads a module-level Python number that a
kernel names as a compile-time constant, so ``if jtype == JNT_HINGE:`` inside a kernel
compiles exactly as ``if jtype == 3:`` did. Host code imports them as
``tiphys.kernels.consts``. Constants that are not MuJoCo's (tiphys's own table columns,
tolerances of one algorithm) stay in the module that uses them.
"""

# ---------------------------------------------------------------- numbers (mjtnum.h, mjmodel.h)
MINVAL = 1e-15  # mjMINVAL: smallest value allowed in a denominator
MAXVAL = 1e10  # mjMAXVAL: larger state values are bad (mj_checkPos/Vel/Acc)
PI = 3.14159265358979323846  # mjPI
EPS = 1e-14  # mjEPS (user_util.h): the compiler's smallest nonzero norm
MINIMP = 0.0001  # mjMINIMP: smallest constraint impedance
MAXIMP = 0.9999  # mjMAXIMP: largest constraint impedance
MINMU = 1e-5  # mjMINMU: smallest friction coefficient
MAXCONPAIR = 50  # mjMAXCONPAIR: most contacts one geom pair may give
NGROUP = 6  # mjNGROUP: visibility groups
NSOLVER = 200  # mjNSOLVER: solver iterations with statistics
NEQDATA = 11  # mjNEQDATA: eq_data per equality constraint
NDYN = 10  # mjNDYN: actuator_dynprm per actuator
NGAIN = 10  # mjNGAIN: actuator_gainprm per actuator
NBIAS = 10  # mjNBIAS: actuator_biasprm per actuator

# ---------------------------------------------------------------- enums (mjmodel.h, mjdata.h, ...)
# mjtGeom: geom types (MJCF <geom type>); 100 and up are rendering-only (mjvGeom)
GEOM_PLANE = 0
GEOM_HFIELD = 1
GEOM_SPHERE = 2
GEOM_CAPSULE = 3
GEOM_ELLIPSOID = 4
GEOM_CYLINDER = 5
GEOM_BOX = 6
GEOM_MESH = 7
GEOM_SDF = 8
NGEOMTYPES = 9
GEOM_ARROW = 100
GEOM_ARROW1 = 101
GEOM_ARROW2 = 102
GEOM_LINE = 103
GEOM_LINEBOX = 104
GEOM_FLEX = 105
GEOM_SKIN = 106
GEOM_LABEL = 107
GEOM_TRIANGLE = 108
GEOM_NONE = 1001

# mjtJoint: joint types
JNT_FREE = 0
JNT_BALL = 1
JNT_SLIDE = 2
JNT_HINGE = 3

# mjtObj: object types
OBJ_UNKNOWN = 0
OBJ_BODY = 1
OBJ_XBODY = 2
OBJ_JOINT = 3
OBJ_DOF = 4
OBJ_GEOM = 5
OBJ_SITE = 6
OBJ_CAMERA = 7
OBJ_LIGHT = 8
OBJ_FLEX = 9
OBJ_MESH = 10
OBJ_SKIN = 11
OBJ_HFIELD = 12
OBJ_TEXTURE = 13
OBJ_MATERIAL = 14
OBJ_PAIR = 15
OBJ_EXCLUDE = 16
OBJ_EQUALITY = 17
OBJ_TENDON = 18
OBJ_ACTUATOR = 19
OBJ_SENSOR = 20
OBJ_NUMERIC = 21
OBJ_TEXT = 22
OBJ_TUPLE = 23
OBJ_KEY = 24
OBJ_PLUGIN = 25
NOBJECT = 26
OBJ_FRAME = 100
OBJ_DEFAULT = 101
OBJ_MODEL = 102

# mjtEq: equality constraint types
EQ_CONNECT = 0
EQ_WELD = 1
EQ_JOINT = 2
EQ_TENDON = 3
EQ_FLEX = 4
EQ_DISTANCE = 5

# mjtTrn: actuator transmission types
TRN_JOINT = 0
TRN_JOINTINPARENT = 1
TRN_SLIDERCRANK = 2
TRN_TENDON = 3
TRN_SITE = 4
TRN_BODY = 5
TRN_UNDEFINED = 1000

# mjtDyn: actuator dynamics types
DYN_NONE = 0
DYN_INTEGRATOR = 1
DYN_FILTER = 2
DYN_FILTEREXACT = 3
DYN_MUSCLE = 4
DYN_USER = 5

# mjtGain: actuator gain types
GAIN_FIXED = 0
GAIN_AFFINE = 1
GAIN_MUSCLE = 2
GAIN_USER = 3

# mjtBias: actuator bias types
BIAS_NONE = 0
BIAS_AFFINE = 1
BIAS_MUSCLE = 2
BIAS_USER = 3

# mjtWrap: tendon wrap object types
WRAP_NONE = 0
WRAP_JOINT = 1
WRAP_PULLEY = 2
WRAP_SITE = 3
WRAP_SPHERE = 4
WRAP_CYLINDER = 5

# mjtSensor: sensor types
SENS_TOUCH = 0
SENS_ACCELEROMETER = 1
SENS_VELOCIMETER = 2
SENS_GYRO = 3
SENS_FORCE = 4
SENS_TORQUE = 5
SENS_MAGNETOMETER = 6
SENS_RANGEFINDER = 7
SENS_CAMPROJECTION = 8
SENS_JOINTPOS = 9
SENS_JOINTVEL = 10
SENS_TENDONPOS = 11
SENS_TENDONVEL = 12
SENS_ACTUATORPOS = 13
SENS_ACTUATORVEL = 14
SENS_ACTUATORFRC = 15
SENS_JOINTACTFRC = 16
SENS_TENDONACTFRC = 17
SENS_BALLQUAT = 18
SENS_BALLANGVEL = 19
SENS_JOINTLIMITPOS = 20
SENS_JOINTLIMITVEL = 21
SENS_JOINTLIMITFRC = 22
SENS_TENDONLIMITPOS = 23
SENS_TENDONLIMITVEL = 24
SENS_TENDONLIMITFRC = 25
SENS_FRAMEPOS = 26
SENS_FRAMEQUAT = 27
SENS_FRAMEXAXIS = 28
SENS_FRAMEYAXIS = 29
SENS_FRAMEZAXIS = 30
SENS_FRAMELINVEL = 31
SENS_FRAMEANGVEL = 32
SENS_FRAMELINACC = 33
SENS_FRAMEANGACC = 34
SENS_SUBTREECOM = 35
SENS_SUBTREELINVEL = 36
SENS_SUBTREEANGMOM = 37
SENS_INSIDESITE = 38
SENS_GEOMDIST = 39
SENS_GEOMNORMAL = 40
SENS_GEOMFROMTO = 41
SENS_CONTACT = 42
SENS_E_POTENTIAL = 43
SENS_E_KINETIC = 44
SENS_CLOCK = 45
SENS_TACTILE = 46
SENS_PLUGIN = 47
SENS_USER = 48

# mjtStage: computation stages (a sensor's needstage)
STAGE_NONE = 0
STAGE_POS = 1
STAGE_VEL = 2
STAGE_ACC = 3

# mjtDataType: sensor data types
DATATYPE_REAL = 0
DATATYPE_POSITIVE = 1
DATATYPE_AXIS = 2
DATATYPE_QUATERNION = 3

# mjtConstraint: constraint row types (efc_type)
CNSTR_EQUALITY = 0
CNSTR_FRICTION_DOF = 1
CNSTR_FRICTION_TENDON = 2
CNSTR_LIMIT_JOINT = 3
CNSTR_LIMIT_TENDON = 4
CNSTR_CONTACT_FRICTIONLESS = 5
CNSTR_CONTACT_PYRAMIDAL = 6
CNSTR_CONTACT_ELLIPTIC = 7

# mjtConstraintState: constraint row states (efc_state)
CNSTRSTATE_SATISFIED = 0
CNSTRSTATE_QUADRATIC = 1
CNSTRSTATE_LINEARNEG = 2
CNSTRSTATE_LINEARPOS = 3
CNSTRSTATE_CONE = 4

# mjtIntegrator: integrators (opt.integrator)
INT_EULER = 0
INT_RK4 = 1
INT_IMPLICIT = 2
INT_IMPLICITFAST = 3

# mjtCone: friction cones (opt.cone)
CONE_PYRAMIDAL = 0
CONE_ELLIPTIC = 1

# mjtJacobian: constraint Jacobian layouts (opt.jacobian)
JAC_DENSE = 0
JAC_SPARSE = 1
JAC_AUTO = 2

# mjtSolver: constraint solvers (opt.solver)
SOL_PGS = 0
SOL_CG = 1
SOL_NEWTON = 2

# mjtWarning: warnings (warning_number columns)
WARN_INERTIA = 0
WARN_CONTACTFULL = 1
WARN_CNSTRFULL = 2
WARN_VGEOMFULL = 3
WARN_BADQPOS = 4
WARN_BADQVEL = 5
WARN_BADQACC = 6
WARN_BADCTRL = 7
NWARNING = 8

# mjtDisableBit: opt.disableflags bits
DSBL_CONSTRAINT = 1 << 0
DSBL_EQUALITY = 1 << 1
DSBL_FRICTIONLOSS = 1 << 2
DSBL_LIMIT = 1 << 3
DSBL_CONTACT = 1 << 4
DSBL_SPRING = 1 << 5
DSBL_DAMPER = 1 << 6
DSBL_GRAVITY = 1 << 7
DSBL_CLAMPCTRL = 1 << 8
DSBL_WARMSTART = 1 << 9
DSBL_FILTERPARENT = 1 << 10
DSBL_ACTUATION = 1 << 11
DSBL_REFSAFE = 1 << 12
DSBL_SENSOR = 1 << 13
DSBL_MIDPHASE = 1 << 14
DSBL_EULERDAMP = 1 << 15
DSBL_AUTORESET = 1 << 16
DSBL_NATIVECCD = 1 << 17
DSBL_ISLAND = 1 << 18
NDISABLE = 19

# mjtEnableBit: opt.enableflags bits
ENBL_OVERRIDE = 1 << 0
ENBL_ENERGY = 1 << 1
ENBL_FWDINV = 1 << 2
ENBL_INVDISCRETE = 1 << 3
ENBL_MULTICCD = 1 << 4
ENBL_SLEEP = 1 << 5
NENABLE = 6

# mjtSameFrame: body/geom/site frame coinciding with the parent or inertia frame
SAMEFRAME_NONE = 0
SAMEFRAME_BODY = 1
SAMEFRAME_INERTIA = 2
SAMEFRAME_BODYROT = 3
SAMEFRAME_INERTIAROT = 4

# mjtCamLight: camera and light tracking modes
CAMLIGHT_FIXED = 0
CAMLIGHT_TRACK = 1
CAMLIGHT_TRACKCOM = 2
CAMLIGHT_TARGETBODY = 3
CAMLIGHT_TARGETBODYCOM = 4

# mjtLightType: light types
LIGHT_SPOT = 0
LIGHT_DIRECTIONAL = 1
LIGHT_POINT = 2
LIGHT_IMAGE = 3

# mjtTexture: texture types
TEXTURE_2D = 0
TEXTURE_CUBE = 1
TEXTURE_SKYBOX = 2

# mjtColorSpace: texture colour spaces
COLORSPACE_AUTO = 0
COLORSPACE_LINEAR = 1
COLORSPACE_SRGB = 2

# mjtBuiltin: procedural textures
BUILTIN_NONE = 0
BUILTIN_GRADIENT = 1
BUILTIN_CHECKER = 2
BUILTIN_FLAT = 3

# mjtMark: procedural texture marks
MARK_NONE = 0
MARK_EDGE = 1
MARK_CROSS = 2
MARK_RANDOM = 3

# mjtTextureRole: texture roles (mat_texid columns)
TEXROLE_USER = 0
TEXROLE_RGB = 1
TEXROLE_OCCLUSION = 2
TEXROLE_ROUGHNESS = 3
TEXROLE_METALLIC = 4
TEXROLE_NORMAL = 5
TEXROLE_OPACITY = 6
TEXROLE_EMISSIVE = 7
TEXROLE_RGBA = 8
TEXROLE_ORM = 9
NTEXROLE = 10

# mjtLimited: <joint/tendon/actuator ...limited>: false, true, auto
LIMITED_FALSE = 0
LIMITED_TRUE = 1
LIMITED_AUTO = 2

# mjtAlignFree: <freejoint align>
ALIGNFREE_FALSE = 0
ALIGNFREE_TRUE = 1
ALIGNFREE_AUTO = 2

# mjtInertiaFromGeom: <compiler inertiafromgeom>
INERTIAFROMGEOM_FALSE = 0
INERTIAFROMGEOM_TRUE = 1
INERTIAFROMGEOM_AUTO = 2

# mjtLRMode: actuator length-range modes
LRMODE_NONE = 0
LRMODE_MUSCLE = 1
LRMODE_MUSCLEUSER = 2
LRMODE_ALL = 3

# mjtState: state vector elements (bits) and composite masks
STATE_TIME = 1 << 0
STATE_QPOS = 1 << 1
STATE_QVEL = 1 << 2
STATE_ACT = 1 << 3
STATE_WARMSTART = 1 << 4
STATE_CTRL = 1 << 5
STATE_QFRC_APPLIED = 1 << 6
STATE_XFRC_APPLIED = 1 << 7
STATE_EQ_ACTIVE = 1 << 8
STATE_MOCAP_POS = 1 << 9
STATE_MOCAP_QUAT = 1 << 10
STATE_USERDATA = 1 << 11
STATE_PLUGIN = 1 << 12
NSTATE = 13
STATE_PHYSICS = STATE_QPOS | STATE_QVEL | STATE_ACT
STATE_FULLPHYSICS = STATE_TIME | STATE_PHYSICS | STATE_PLUGIN
STATE_USER = (STATE_CTRL | STATE_QFRC_APPLIED | STATE_XFRC_APPLIED | STATE_EQ_ACTIVE
              | STATE_MOCAP_POS | STATE_MOCAP_QUAT | STATE_USERDATA)
STATE_INTEGRATION = STATE_FULLPHYSICS | STATE_USER | STATE_WARMSTART


# ---------------------------------------------------------------- names
# MJCF keywords in enum order: GEOM_TYPE_NAMES[GEOM_BOX] == "box"
GEOM_TYPE_NAMES = ("plane", "hfield", "sphere", "capsule", "ellipsoid", "cylinder", "box",
                   "mesh", "sdf")
JOINT_TYPE_NAMES = ("free", "ball", "slide", "hinge")
# mjtWarning in order, as MuJoCo's warning texts name them (mjWARN_INERTIA -> "inertia")
WARNING_NAMES = ("inertia", "contactfull", "cnstrfull", "vgeomfull", "badqpos", "badqvel",
                 "badqacc", "badctrl")
