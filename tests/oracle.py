"""Helpers that build MuJoCo 3.4.0 (the oracle) and tiphys from the same model."""
from __future__ import annotations

import os

import numpy as np
from lxml import etree

from tiphys.types import MODEL_FIELDS, numpy_shape

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# Sections compiled by later issues: stripped (in both engines) for stage tests.
LATER_SECTIONS = ("tendon", "actuator", "equality", "deformable", "extension")


def corpus_dir() -> str:
    env = os.environ.get("TIPHYS_CORPUS")
    if env:
        return env
    return os.path.join(REPO, ".cache", "corpus")


# Corpus sources read only by the tests that ask for them (the compiler and sensor
# corpus tests): the dm_control suite adds ~30 robots with sensors, too many for every
# stage test's Taichi compiles within the suite's time budget.
EXTRA_SOURCES = ("dmc", "menagerie", "metaworld", "robosuite", "gymrobotics", "loco")


def corpus_models(include_extra: bool = False) -> list[str]:
    """Every MJCF model file in the corpus (relative paths), sorted; the EXTRA_SOURCES
    folders only with ``include_extra``."""
    root = corpus_dir()
    out = []
    for dirpath, _, files in os.walk(root):
        rel_dir = os.path.relpath(dirpath, root)
        if not include_extra and rel_dir.split(os.sep)[0] in EXTRA_SOURCES:
            continue
        for f in files:
            if not f.endswith(".xml") or f.startswith("."):
                continue  # dotfiles are temporary copies written by the tests
            path = os.path.join(dirpath, f)
            with open(path, "rb") as fh:
                head = fh.read(4096)
            if b"<mujoco" not in head:
                continue
            out.append(os.path.relpath(path, root))
    return sorted(out)


def is_included_fragment(path: str) -> bool:
    """True for files that only make sense included into another model."""
    try:
        import mujoco
        mujoco.MjModel.from_xml_path(path)
        return False
    except Exception:
        return True


def _inline_includes(root, basedir):
    for inc in list(root.iter("include")):
        path = os.path.join(basedir, inc.get("file"))
        sub = etree.parse(path).getroot()
        _inline_includes(sub, os.path.dirname(path))
        parent = inc.getparent()
        idx = parent.index(inc)
        parent.remove(inc)
        for k, child in enumerate(sub):
            parent.insert(idx + k, child)


def strip_later_sections(path: str, sections=LATER_SECTIONS) -> bytes:
    """The model's own XML with the sections of later issues removed.

    Includes are inlined first; keyframe ctrl/act go too when actuators do (they
    index actuators). Everything else (units, defaults, frames...) stays as the
    author wrote it.
    """
    parser = etree.XMLParser(remove_comments=True)
    root = etree.parse(path, parser).getroot()
    _inline_includes(root, os.path.dirname(path))
    for tag in sections:
        for el in root.findall(tag):
            root.remove(el)
    if "actuator" in sections:
        for key in root.iter("key"):
            for attr in ("ctrl", "act"):
                key.attrib.pop(attr, None)
    return etree.tostring(root)


def has_sections(path: str, sections) -> bool:
    """Whether the model (includes inlined) has any of ``sections`` at its top level:
    only then does stripping them change what is compiled."""
    try:
        root = etree.parse(path, etree.XMLParser(remove_comments=True)).getroot()
        _inline_includes(root, os.path.dirname(path))
    except (etree.XMLSyntaxError, OSError):
        return True  # (let the test that strips say what is wrong)
    return any(root.find(tag) is not None for tag in sections)


class StrippedModel:
    """A stripped copy written next to the original (so asset paths resolve)."""

    def __init__(self, path: str, sections=LATER_SECTIONS):
        self.path = path
        self.sections = tuple(sections)
        self.tmp = os.path.join(os.path.dirname(path),
                                f".tiphys_stripped_{os.getpid()}_{os.path.basename(path)}")

    def __enter__(self):
        with open(self.tmp, "wb") as f:
            f.write(strip_later_sections(self.path, self.sections))
        return self.tmp

    def __exit__(self, *exc):
        if os.path.exists(self.tmp):
            os.remove(self.tmp)


def mujoco_model(path: str):
    """MuJoCo's compile of a file, with its mesh cache off (the cache keys on file
    names only, so compile order could change its output)."""
    import mujoco
    mujoco.mj_setCacheCapacity(mujoco.mj_getCache(), 0) if hasattr(mujoco, "mj_getCache") \
        else None
    return mujoco.MjModel.from_xml_path(path)


# Fields compared elsewhere because an exact match is out of reach (see tests/test_mesh.py):
# mesh_graph neighbour order inside Qhull-merged facets comes from Qhull internals.
KNOWN_GAPS = ("mesh_graph",)


def compare_arrays(name, ours, theirs, rtol=1e-6, atol=1e-9):
    ours = np.asarray(ours, dtype=np.float64)
    theirs = np.asarray(theirs, dtype=np.float64)
    if ours.shape != theirs.shape:
        return f"{name}: shape {ours.shape} != {theirs.shape}"
    if ours.size == 0:
        return None
    bad = ~np.isclose(ours, theirs, rtol=rtol, atol=atol, equal_nan=True)
    if bad.any():
        idx = np.argwhere(bad)[0]
        return (f"{name}: {bad.sum()} mismatches, first at {tuple(idx)}: "
                f"{ours[tuple(idx)]} vs {theirs[tuple(idx)]}")
    return None


def compare_model(arrays, mjm, rtol=1e-6, atol=1e-9, skip=()) -> list[str]:
    """Every Model field both engines have, compared; returns the list of mismatches."""
    errors = []
    for k, v in arrays.sizes.items():
        if hasattr(mjm, k) and int(getattr(mjm, k)) != v:
            errors.append(f"size {k}: {v} != {getattr(mjm, k)}")
    if errors:
        return errors
    for name, shape, _, _ in MODEL_FIELDS:
        if name in skip or name in KNOWN_GAPS:
            continue
        want = numpy_shape(shape, arrays.sizes)
        if shape.startswith("*"):
            want = want[1:]
        theirs = getattr(mjm, name)
        if isinstance(theirs, bytes):  # text_data
            theirs = np.frombuffer(theirs, dtype=np.uint8)
        theirs = np.asarray(theirs).reshape(want)
        err = compare_arrays(name, getattr(arrays, name), theirs, rtol, atol)
        if err:
            errors.append(err)
    from dataclasses import fields as dc_fields
    for f in dc_fields(arrays.opt):
        err = compare_arrays("opt." + f.name, getattr(arrays.opt, f.name),
                             getattr(mjm.opt, f.name), rtol, atol)
        if err:
            errors.append(err)
    for name in ("meaninertia", "meanmass", "meansize", "extent", "center"):
        err = compare_arrays("stat." + name, getattr(arrays.stat, name),
                             getattr(mjm.stat, name), rtol, atol)
        if err:
            errors.append(err)
    return errors


def load_pair_from_xml(path: str, xml: bytes, tag: str):
    """tiphys Model and mujoco.MjModel compiled from ``xml``, written next to ``path``
    (a dotfile, removed afterwards) so relative asset paths resolve."""
    import tiphys
    tmp = os.path.join(os.path.dirname(path),
                       f".tiphys_{tag}_{os.getpid()}_{os.path.basename(path)}")
    with open(tmp, "wb") as f:
        f.write(xml)
    try:
        return tiphys.load_model(tmp), mujoco_model(tmp)
    finally:
        os.remove(tmp)


def stripped_corpus_pair(rel: str):
    """(tiphys Model, MjModel) of a corpus model with later sections stripped.

    tiphys' NotImplementedError goes through (tests/corpus_xfail.py pins the models
    expected to raise it); models MuJoCo rejects are left out of the parametrization
    (corpus_xfail.stage_models).
    """
    import tiphys
    with StrippedModel(os.path.join(corpus_dir(), rel)) as tmp:
        mjm = mujoco_model(tmp)
        return tiphys.load_model(tmp), mjm


# ------------------------------------------------------------------------------------
# contacts
# ------------------------------------------------------------------------------------

CONTACT_FLOATS = ("dist", "pos", "frame", "includemargin", "friction", "solref",
                  "solreffriction", "solimp")
CONTACT_INTS = ("dim", "geom", "flex", "elem", "vert", "exclude")


def mujoco_contacts(mjd) -> list[dict]:
    """MuJoCo's contacts of one MjData as dicts of numpy arrays (after mj_collision)."""
    out = []
    for c in mjd.contact[:mjd.ncon]:
        out.append({k: np.array(getattr(c, k), dtype=np.float64).reshape(-1)
                    for k in CONTACT_FLOATS + CONTACT_INTS})
    return out


def tiphys_contacts(d, world: int, arrays=None) -> list[dict]:
    """tiphys' contacts of one world, in the same form as mujoco_contacts
    (``arrays``: the contact arrays already fetched with contact_arrays(d))."""
    arrays = arrays or contact_arrays(d)
    n = int(arrays["ncon"][world])
    return [{k: np.array(arrays[k][world, i], dtype=np.float64).reshape(-1)
             for k in CONTACT_FLOATS + CONTACT_INTS} for i in range(n)]


def contact_arrays(d) -> dict:
    """Every contact array of d as numpy (one copy each), plus ncon."""
    out = {k: d.numpy("contact_" + k) for k in CONTACT_FLOATS + CONTACT_INTS}
    out["ncon"] = d.numpy("ncon")
    return out


def compare_contacts(ours, theirs, atol=1e-9, frame_atol=None) -> list[str]:
    """Mismatches between two contact lists, compared in order (MuJoCo's order).

    ``frame_atol``: tolerance for the tangent rows of the frame (they follow the
    normal; detectors that differ only in tangent hints can be checked looser)."""
    errors = []
    if len(ours) != len(theirs):
        geoms_o = [tuple(c["geom"].astype(int)) for c in ours]
        geoms_t = [tuple(c["geom"].astype(int)) for c in theirs]
        return [f"ncon {len(ours)} != {len(theirs)}: ours {geoms_o}, MuJoCo {geoms_t}"]
    for i, (a, b) in enumerate(zip(ours, theirs)):
        for k in CONTACT_INTS:
            if not np.array_equal(a[k], b[k]):
                errors.append(f"contact {i} {k}: {a[k]} != {b[k]}")
        for k in CONTACT_FLOATS:
            tol = atol
            va, vb = a[k], b[k]
            if k == "frame":
                if not np.allclose(va[:3], vb[:3], atol=atol, rtol=0):
                    errors.append(f"contact {i} normal: {va[:3]} != {vb[:3]}")
                tol = atol if frame_atol is None else frame_atol
                va, vb = va[3:], vb[3:]
            if not np.allclose(va, vb, atol=tol, rtol=1e-9):
                errors.append(f"contact {i} {k}: {va} != {vb}")
    return errors


def random_free_qpos(mjm, rng, nworld, spread=0.3, center=(0.0, 0.0, 0.0)):
    """Random qpos for ``nworld`` worlds: free joints get positions around their
    qpos0 (+ center) within +-spread and uniformly random orientations; other joints
    get small random offsets."""
    import mujoco
    qpos = np.tile(mjm.qpos0, (nworld, 1))
    for j in range(mjm.njnt):
        adr = mjm.jnt_qposadr[j]
        t = mjm.jnt_type[j]
        for w in range(nworld):
            if t == mujoco.mjtJoint.mjJNT_FREE:
                qpos[w, adr:adr + 3] += np.asarray(center) + rng.uniform(-spread, spread, 3)
                q = rng.normal(size=4)
                qpos[w, adr + 3:adr + 7] = q / np.linalg.norm(q)
            elif t == mujoco.mjtJoint.mjJNT_BALL:
                q = rng.normal(size=4)
                qpos[w, adr:adr + 4] = q / np.linalg.norm(q)
            else:
                qpos[w, adr] += rng.uniform(-spread, spread)
    return qpos


def collide_both(m, d, mjm, qpos):
    """Run tiphys kinematics + collision on all worlds of ``d`` and MuJoCo's
    mj_kinematics + mj_collision per world from the same qpos; returns
    (ours, theirs): per-world contact lists."""
    import mujoco
    import tiphys
    from tiphys.kernels.collision_driver import collision
    nworld = d.nworld
    d.qpos.from_numpy(_pad(qpos, d.qpos))
    tiphys.kinematics(m, d)
    _poison_contacts(d)
    collision(m, d)
    mjd = mujoco.MjData(mjm)
    ours, theirs = [], []
    arrays = contact_arrays(d)
    for w in range(nworld):
        mjd.qpos[:] = qpos[w]
        mujoco.mj_kinematics(mjm, mjd)
        mujoco.mj_collision(mjm, mjd)
        theirs.append(mujoco_contacts(mjd))
        ours.append(tiphys_contacts(d, w, arrays))
    return ours, theirs


def _pad(values, arr):
    full = np.zeros(arr.shape, dtype=np.float64)
    full[tuple(slice(0, n) for n in values.shape)] = values
    return full


def _poison_contacts(d):
    for name in ("contact_dist", "contact_pos", "contact_frame", "contact_includemargin",
                 "contact_friction", "contact_solref", "contact_solreffriction",
                 "contact_solimp"):
        arr = getattr(d, name)
        arr.from_numpy(np.full(arr.shape + tuple(getattr(arr, "element_shape", ())),
                               np.nan))
