"""Corpus models that tiphys does not take yet: one pinned table per corpus test.

Each table maps a model (path relative to the corpus) to the reason it does not work
yet: text of the NotImplementedError it raises today. ``corpus_params`` makes each
listed model a strict xfail that must raise NotImplementedError, so that

- a listed model that starts working fails the test (XPASS strict) until it is taken
  off the table,
- a listed model that fails in another way (a mismatch, another exception) fails,
- ``not_yet`` checks that a listed model still raises for the pinned reason, and
  records the reason in the corpus report,
- a model off the table that raises NotImplementedError fails.

Models MuJoCo itself rejects are not "not yet": they are filtered out of the
parametrization by asking MuJoCo (``mujoco_accepts``), and test_compiler_corpus
checks that tiphys rejects them too.
"""
from __future__ import annotations

import contextlib
import functools
import json
import os
import re

import pytest

from oracle import LATER_SECTIONS, StrippedModel, corpus_dir, corpus_models, mujoco_model

_LOCATION = re.compile(r"^[^\s:]+:\d+: ")  # "file:line: " (temporary copies' names)

# the compiler corpus, as written and with <deformable>/<extension> stripped (models
# whose geoms need their plugins are compiled as written): the same models
_COMPILER: dict = {}

NOT_YET: dict[str, dict[str, str]] = {
    # stage tests on the corpus with oracle.LATER_SECTIONS stripped
    "test_kinematics": {
    },
    "test_smooth": {
    },
    "test_collision_corpus": {
    },
    "test_collide_convex": {},
    # as written (sensors need the whole model), dm_control suite included
    "test_sensor_corpus": {
    },
    "test_constraint": {
    },
    # models with tendons or actuators (test_actuation.CANDIDATES), those sections kept
    "test_actuation": {
    },
    "test_integrators": {
    },
    # compiled as written (every corpus source, dm_control included)
    "test_compiler_corpus": _COMPILER,
    # <deformable> and <extension> stripped; models whose geoms need their plugins are
    # compiled as written
    "test_compiler_corpus_stripped": _COMPILER,
    # keyed "model option" (fusestatic, discardvisual), oracle.LATER_SECTIONS stripped
    "test_compiler_options": {
    },
    # sensor, deformable and extension stripped
    "test_trajectory_corpus": {
    },
}


# Models tiphys takes but where a result differs from MuJoCo's beyond the test's
# tolerance, for a cause found and not fixed yet: strict xfails that must fail their
# comparison (AssertionError); one that starts to match fails until it is taken off.
# Not pinned since the trajectories run with MuJoCo's default flags: with
# <flag island="disable"/>, mjwarp/actuation/adhesion.xml's world 0 (qpos0: spheres
# half sunk in the plane) has four contact rows of zero Jacobian and R=2e-15 whose
# forces are 1.3e17; the whole world's Newton cost is dominated by them, tiphys takes
# 4 iterations where MuJoCo takes 3 and qacc of the other dofs differs by 0.3-2. With
# islands those rows are an island of their own and the trajectories match.
KNOWN_MISMATCH: dict[str, dict[str, str]] = {
    "test_trajectory_corpus": {},
}


def corpus_params(test: str, models) -> list:
    """``models`` as pytest parameters, those on NOT_YET[test] as strict xfails that
    must raise NotImplementedError, those on KNOWN_MISMATCH[test] as strict xfails
    that must fail their comparison."""
    table = NOT_YET[test]
    mismatch = KNOWN_MISMATCH.get(test, {})
    models = list(models)
    stale = sorted((set(table) | set(mismatch)) - set(models)) if models else []
    assert not stale, f"{test}: pinned models not in the parametrization: {stale}"
    out = []
    for rel in models:
        if rel in table:
            out.append(pytest.param(rel, marks=pytest.mark.xfail(
                strict=True, raises=NotImplementedError, reason=table[rel])))
        elif rel in mismatch:
            out.append(pytest.param(rel, marks=pytest.mark.xfail(
                strict=True, raises=AssertionError, reason=mismatch[rel])))
        else:
            out.append(rel)
    return out


@contextlib.contextmanager
def not_yet(test: str, group: str, rel: str):
    """Record a NotImplementedError in the corpus report and let it through (a listed
    model then xfails, an unlisted one fails); a listed model must raise its pinned
    reason."""
    from conftest import record  # not at import: the f32 scripts must not init f64
    try:
        yield
    except NotImplementedError as exc:
        msg = str(exc)
        record(group, rel, "not yet: " + _LOCATION.sub("", msg))
        pinned = NOT_YET[test].get(rel)
        if pinned is not None and pinned not in msg:
            raise AssertionError(f"{rel} is pinned in corpus_xfail.NOT_YET[{test!r}] for "
                                 f"{pinned!r} but now raises {msg!r}") from exc
        raise


# Sections the rows and trajectory corpus tests strip (test_constraint's
# COMPILER_LATER, test_trajectory_corpus's STRIP)
SENSORS_LATER = ("sensor", "deformable", "extension")
# The section sets the stage tests strip before asking MuJoCo: the kept table holds
# the answers for exactly these
ACCEPT_VARIANTS = (None, LATER_SECTIONS, SENSORS_LATER)
# MuJoCo's answers, kept next to the corpus: every pytest process collects every test
# file, and asking MuJoCo anew cost each one ~40 s (447 compiles)
TABLE = ".mujoco_accepts.json"


def _compile_accepts(path: str, sections: tuple | None) -> bool:
    try:
        if sections is None:
            mujoco_model(path)
        else:
            with StrippedModel(path, sections) as tmp:
                mujoco_model(tmp)
    except ValueError:
        return False
    return True


def _table_key(rel: str, sections: tuple | None) -> str:
    return rel + "|" + ("" if sections is None else ",".join(sorted(sections)))


def _stamp(path: str) -> str:
    st = os.stat(path)
    return f"{st.st_size}:{st.st_mtime_ns}"


@functools.cache
def _table() -> dict:
    """The kept answers {key: [file stamp, accepted]} for this MuJoCo version."""
    import mujoco
    try:
        with open(os.path.join(corpus_dir(), TABLE)) as f:
            data = json.load(f)
    except (OSError, ValueError):
        return {}
    return data.get("entries", {}) if data.get("mujoco") == mujoco.__version__ else {}


@functools.cache
def _accepts(path: str, sections: tuple | None) -> bool:
    rel = os.path.relpath(path, corpus_dir())
    kept = _table().get(_table_key(rel, sections))
    if kept is not None and kept[0] == _stamp(path):
        return kept[1]
    return _compile_accepts(path, sections)


def _answer(job):
    rel, sections = job
    path = os.path.join(corpus_dir(), rel)
    try:
        return _table_key(rel, sections), [_stamp(path), _compile_accepts(path, sections)]
    except Exception:  # noqa: BLE001 - left to the test process, which raises it there
        return None


def fill_accepts_table(processes: int) -> None:
    """Ask MuJoCo, on ``processes`` processes, about every corpus model (as written and
    with each of ACCEPT_VARIANTS' sections stripped) not yet in the kept table, and
    keep the answers. Run once before the test processes collect (conftest.py)."""
    import multiprocessing

    import mujoco
    entries = dict(_table())
    root = corpus_dir()
    if not os.path.isdir(root):
        return
    fresh = {key: value for key, value in entries.items()
             if os.path.exists(os.path.join(root, key.split("|")[0])) and
             value[0] == _stamp(os.path.join(root, key.split("|")[0]))}

    def missing(jobs):
        return [job for job in jobs if _table_key(*job) not in fresh]

    def run(jobs):
        if not jobs:
            return
        if processes > 1 and len(jobs) > 1:
            with multiprocessing.get_context("spawn").Pool(processes) as pool:
                results = pool.map(_answer, jobs, chunksize=4)
        else:
            results = [_answer(job) for job in jobs]
        fresh.update(result for result in results if result is not None)

    run(missing([(rel, None) for rel in corpus_models(True)]))
    written = [rel for rel in corpus_models() if fresh.get(_table_key(rel, None), [0, 0])[1]]
    run(missing([(rel, tuple(v)) for rel in written for v in ACCEPT_VARIANTS[1:]]))
    if fresh == entries:
        return
    tmp = os.path.join(root, f"{TABLE}.{os.getpid()}")
    try:
        with open(tmp, "w") as f:
            json.dump({"mujoco": mujoco.__version__, "entries": fresh}, f)
        os.replace(tmp, os.path.join(root, TABLE))
    except OSError:  # a read-only corpus: each process asks MuJoCo itself, as before
        return
    _table.cache_clear()


def mujoco_accepts(rel: str, sections: tuple | None = None) -> bool:
    """True if MuJoCo compiles the corpus model as written (``sections`` None) or with
    those sections stripped. A model it rejects is a fact about the model (a fragment
    meant to be included, or one whose geoms need the <extension> plugins a stage test
    strips), not a tiphys gap: stage tests leave such models out."""
    return _accepts(os.path.join(corpus_dir(), rel), sections)



def stage_models(sections: tuple = LATER_SECTIONS, include_extra: bool = False) -> list:
    """Corpus models MuJoCo compiles both as written and with ``sections`` stripped."""
    return [rel for rel in corpus_models(include_extra)
            if mujoco_accepts(rel) and mujoco_accepts(rel, tuple(sections))]
