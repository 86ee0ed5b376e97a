"""docs/API.md cannot lie: every tiphys name it lists exists and is exported, every
mj_*/mjd_* function of the mujoco package has a row, and the counts it states are
the rows' counts."""
import os
import re

import mujoco

import tiphys

DOC = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "docs",
                   "API.md")
STATUSES = ("yes", "other form", "not yet", "not applicable")


def _rows():
    """(MuJoCo column, tiphys column, status, notes) of every table row."""
    rows = []
    with open(DOC, encoding="utf-8") as f:
        for line in f:
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if len(cells) == 4 and cells[0].startswith("`"):
                rows.append(tuple(cells))
    return rows


def test_every_listed_tiphys_name_is_exported():
    rows = _rows()
    assert len(rows) > 150
    for mj, ours, status, _ in rows:
        assert status in STATUSES, (mj, status)
        names = re.findall(r"`([^`]+)`", ours)
        if status in ("yes", "other form"):
            assert names, f"{mj}: status {status} without a tiphys name"
        else:
            assert not names, f"{mj}: {status} but names {names}"
        for name in names:
            head, *rest = name.split(".")
            assert head in tiphys.__all__, f"{mj}: tiphys.{head} is not exported"
            obj = getattr(tiphys, head)
            for attr in rest:
                obj = getattr(obj, attr)
            assert callable(obj), f"{mj}: tiphys.{name} is not callable"


def test_every_mujoco_function_has_a_row():
    listed = set()
    for mj, *_ in _rows():
        listed.update(re.findall(r"\bmj[a-z]?_[A-Za-z0-9_]+", mj))
    functions = {n for n in dir(mujoco) if re.match(r"^(mj_|mjd_|mju_ray)", n)
                 and callable(getattr(mujoco, n))}
    assert len(functions) > 100
    assert not sorted(functions - listed), sorted(functions - listed)
    assert len([r for r in _rows() if r[0].count("`") == 2]) == len(
        {r[0] for r in _rows() if r[0].count("`") == 2}), "a function is listed twice"


def test_stated_counts_match_the_rows():
    with open(DOC, encoding="utf-8") as f:
        text = f.read()
    m = re.search(r"Counts: (\d+) functions: (\d+) yes, (\d+) other form, (\d+) not yet, "
                  r"(\d+) not applicable", text)
    assert m, "the counts line is missing"
    rows = [r for r in _rows() if re.fullmatch(r"`mj[a-z]?_[A-Za-z0-9]+`", r[0])]
    counts = [sum(r[2] == s for r in rows) for s in STATUSES]
    assert [int(x) for x in m.groups()] == [len(rows)] + counts


def test_planned_names_that_now_exist_are_marked_present():
    """A row 'not yet ... planned as `name`' goes stale once tiphys exports name."""
    stale = []
    for mj, _, status, notes in _rows():
        for name in re.findall(r"planned as `([^`]+)`", notes):
            if status == "not yet" and hasattr(tiphys, name):
                stale.append(f"{mj}: tiphys.{name} exists now; mark it yes")
    assert not stale, stale
