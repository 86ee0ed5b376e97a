"""Warnings counted on the device, reported on the host.

The step never reads anything back from the device. Capacity overflows are counted
where they happen, in ``warning_number`` / ``warning_lastinfo`` as MuJoCo counts
mjWARN_CONTACTFULL and mjWARN_CNSTRFULL, and the host turns new counts into Python
warnings naming the option to raise:

- when the user reads results (``Data.numpy``);
- on an explicit ``tiphys.check_warnings(m, d)``;
- at the latest every ``REPORT_EVERY`` calls of ``step`` / ``step2`` on that Data
  (one small read-back then, none in the other steps).

Each occurrence is reported once: the host keeps the counts it has reported.
"""
from __future__ import annotations

import warnings

import numpy as np

from .backend import download
from .kernels.consts import WARN_CNSTRFULL, WARN_CONTACTFULL
from .kernels.loop_limit import CUT_COLLISION, CUT_SENSOR, loop_limit
from .model import checks_model_data

REPORT_EVERY = 1000  # steps between reports at the latest


# per warning: the text (world w, lastinfo n, capacity cap) and the capacity's option
_TEXTS = {
    WARN_CONTACTFULL: ("collision: nconmax={cap} contact slots were not enough in {k} "
                       "world(s) (world {w}: {n} contacts found or added, the first {cap} "
                       "in pair order kept); raise it with make_data(m, nworld, "
                       "nconmax=...)", "nconmax"),
    WARN_CNSTRFULL: ("make_constraint: njmax={cap} constraint rows were not enough in {k} "
                     "world(s) (world {w} needed {n} rows: the first element that did not "
                     "fit and all after it were dropped); raise it with make_data(m, "
                     "nworld, njmax=...)", "njmax"),
}

# the sparse Jacobian's non-zeros ran out before the rows did (reported instead)
_NNZ_TEXT = ("make_constraint: njnnz={cap} sparse Jacobian non-zeros were not enough in {k} "
             "world(s) (world {w}: the dropped rows needed {n} non-zeros; the first element "
             "that did not fit and all after it were dropped); raise it with make_data(m, "
             "nworld, njnnz=...)")


def _new_since_report(d, seen_attr: str, counts: np.ndarray) -> np.ndarray:
    """Per world, the counts in ``counts`` that are new since the last report, which
    kept them in ``d.<seen_attr>`` (now replaced by these): a count below the kept one
    was reset to 0 since (reset_data), and all of it is new."""
    seen = getattr(d, seen_attr, None)
    if seen is None or seen.shape != counts.shape:
        seen = np.zeros_like(counts)
    setattr(d, seen_attr, counts.copy())
    return np.where(counts < seen, counts, counts - seen)


# Newton's sparse Hessian factor ran out of non-zeros (tiphys's own count)
_HESSIAN_TEXT = ("solve: nhnnz={cap} sparse Newton Hessian non-zeros were not enough in {k} "
                 "world(s) (world {w}: its islands' factors needed at least {n}; the "
                 "islands that did not fit were solved by CG instead); raise it with "
                 "make_data(m, nworld, nhnnz=...)")


def _report_hessian(d, stacklevel: int) -> bool:
    """Warn about sparse Hessian overflows counted since the last report."""
    over = download(d.efc_H_overflow)[:d.nworld]
    new = _new_since_report(d, "_reported_hessian", over[:, 0])
    worlds = np.nonzero(new > 0)[0]
    if not len(worlds):
        return False
    w = int(worlds[0])
    warnings.warn(_HESSIAN_TEXT.format(cap=d.nhnnz, k=len(worlds), w=w, n=int(over[w, 1])),
                  RuntimeWarning, stacklevel=stacklevel + 1)
    return True


# the dynamic broadphase's pair slots ran out (tiphys's own count)
_BROAD_TEXT = ("collision: nbroadmax={cap} broadphase pair slots were not enough in {k} "
               "world(s) (world {w} needed {n}: the pairs past them in MuJoCo's order were "
               "not collided); raise it with make_data(m, nworld, nbroadmax=...)")


def _report_broadphase(d, stacklevel: int) -> bool:
    """Warn about dynamic-broadphase overflows counted since the last report."""
    over = download(d.broadphase_overflow)[:d.nworld]
    new = _new_since_report(d, "_reported_broadphase", over[:, 0])
    worlds = np.nonzero(new > 0)[0]
    if not len(worlds):
        return False
    w = int(worlds[0])
    warnings.warn(_BROAD_TEXT.format(cap=d.nbroadmax, k=len(worlds), w=w, n=int(over[w, 1])),
                  RuntimeWarning, stacklevel=stacklevel + 1)
    return True


# a loop-limiting backend cut threads short (kernels/loop_limit.py): per loop_cut column
_LOOP_TEXT = "this backend cuts a kernel thread's loops short after {limit} iterations " \
    "(Mesa's lavapipe), and it did so in {n} {what} thread(s) in {k} world(s) (world {w}): " \
    "{harm}; {fix}, or run on the CPU or a GPU"
_LOOP_KINDS = {
    CUT_COLLISION: ("collision: ", "SDF collision or distance", "their contacts or "
                    "distances may be missing or wrong", "lower the model's "
                    "sdf_iterations / sdf_initpoints or the SDF pairs per world"),
    CUT_SENSOR: ("sensor: ", "rangefinder or tactile sensor", "their readings may be "
                 "wrong", "shorten what a rangefinder's ray crosses (large height fields "
                 "and meshes cost most) or lower the contacts of a tactile sensor's body"),
}


def _report_loop_cut(d, stacklevel: int) -> bool:
    """Warn about threads cut by a loop limiter since the last report."""
    limit = loop_limit()
    if limit is None:
        return False  # (no limiter: nothing is ever counted)
    new = _new_since_report(d, "_reported_loop_cut", download(d.loop_cut)[:d.nworld])
    warned = False
    for column, (stage, what, harm, fix) in _LOOP_KINDS.items():
        worlds = np.nonzero(new[:, column] > 0)[0]
        if len(worlds):
            warnings.warn(stage + _LOOP_TEXT.format(
                limit=limit, n=int(new[:, column].sum()), what=what, k=len(worlds),
                w=int(worlds[0]), harm=harm, fix=fix), RuntimeWarning,
                stacklevel=stacklevel + 1)
            warned = True
    return warned


def report(d, stacklevel: int = 3) -> dict:
    """Warn about the overflows counted since the last report; returns
    {warning id: worlds (array) with new counts} for those that were new."""
    d._steps_since_report = 0
    number = download(d.warning_number)[:d.nworld]  # warnings_of, without a launch
    new = _new_since_report(d, "_reported_warnings", number)
    out = {}
    for warning, (text, option) in _TEXTS.items():
        worlds = np.nonzero(new[:, warning] > 0)[0]
        if len(worlds):
            w = int(worlds[0])
            n = int(np.asarray(download(d.warning_lastinfo))[w, warning])
            message = text.format(cap=getattr(d, option), k=len(worlds), w=w, n=n)
            if warning == WARN_CNSTRFULL and getattr(d, "njnnz", 0):
                nz = download(d.efc_J_overflow)[:d.nworld][worlds]
                if np.any(nz > 0):
                    first = int(np.argmax(nz > 0))
                    message = _NNZ_TEXT.format(cap=d.njnnz, k=int(np.count_nonzero(nz)),
                                               w=int(worlds[first]), n=int(nz[first]))
            warnings.warn(message, RuntimeWarning, stacklevel=stacklevel)
            out[warning] = worlds
    if getattr(d, "nhnnz", 0):
        _report_hessian(d, stacklevel)
    if getattr(d, "nbroadmax", 0):
        _report_broadphase(d, stacklevel)
    _report_loop_cut(d, stacklevel)
    return out


@checks_model_data
def check_warnings(m, d) -> dict:
    """Report, as RuntimeWarnings, the capacity overflows (nconmax, njmax) counted on
    the device since the last report, and return {warning id: worlds}. ``step`` does
    this itself at the latest every REPORT_EVERY steps, and reading a field with
    ``d.numpy`` does it too."""
    return report(d)


def stepped(d) -> None:
    """Count a step; report when REPORT_EVERY steps passed without a report."""
    n = d._steps_since_report + 1
    d._steps_since_report = n
    if n >= REPORT_EVERY:
        report(d, stacklevel=4)
