"""Shared set-up: Taichi on the CPU in f64 (the oracle precision), corpus report."""
import os
import sys
import time

import pytest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import tiphys  # noqa: E402


def pytest_configure(config):
    if getattr(config.option, "numprocesses", None) and not hasattr(config, "workerinput"):
        # the pytest-xdist controller, before its workers start: MuJoCo's verdict on
        # every corpus model, asked once on all cores and kept (corpus_xfail.TABLE),
        # instead of in each worker's collection
        from corpus_xfail import fill_accepts_table
        fill_accepts_table(os.cpu_count() or 1)
        # which device backends run, decided here once for every worker (spirv.ARCHS_ENV)
        import spirv
        spirv.device_archs()
    # here, not at import: the f32 scripts some test files run in a subprocess import
    # this module (for ``record``) and then initialise Taichi in f32 themselves
    tiphys.init(arch="cpu", precision="f64", **({"debug": True} if os.environ.get("TIPHYS_TEST_DEBUG") else {}))

# The files that take longest on a 2-core machine with empty caches (the --durations
# of a cold `make test`, 2026-11-27), run first: `make test` hands whole files to its
# pytest-xdist workers in collection order (--no-loadscope-reorder: pytest-xdist 3.6+
# otherwise sorts the files by their number of tests, which undid this order and ran
# the render files near the end), so a long file collected last keeps one worker busy
# while the other has nothing left to do. Order only: every test runs.
#
# Before them, the files that draw with GGUI. Most objects missing from frames of
# full runs were GGUI's unwritten instance-transform buffer (fixed in the renderer,
# 2026-11-28; test_render's test_meshes_survive_nan_left_in_freed_ggui_memory). One
# failure is left: late in a worker (after ~4000 tests, test_render_skin's dog, the
# one 53 MB vertex buffer of the suite), a segmentation frame came back drawn from
# stale vertex data (2 of 2 full runs without this order, 2026-11-28; never in a
# young worker, never alone). Its cause in GGUI/lavapipe is not found (README,
# "Viewer"); run early, these files draw in young workers.
RENDER_FIRST = ("test_render_skin", "test_render_textures", "test_render",
                "test_render_flex", "test_render_flex_flags")
LONG_FIRST = RENDER_FIRST + ("test_sparse_jacobian", "test_collide_sdf", "test_sensor_acc",
              "test_flex_collision", "test_cli", "test_sensor", "test_compiler_corpus",
              "test_sensor_corpus", "test_sparse_newton",
              "test_solver_vulkan", "test_noslip", "test_solver", "test_plugin_touch",
              "test_compiler_actuator_tendon", "test_flex_compiler", "test_plugin",
              "test_collide_convex", "test_distributed", "test_trajectory_corpus")


@pytest.hookimpl(optionalhook=True)  # (known only where pytest-xdist is loaded)
def pytest_xdist_make_scheduler(config, log):
    """`--dist loadfile`, except that the tests using the f32/Vulkan helper processes
    form one work unit of their own (tests/helper_scope.py says why)."""
    if config.getoption("dist", None) != "loadfile":
        return None
    from xdist.scheduler import LoadFileScheduling

    import helper_scope
    root = str(config.rootpath)

    class HelperScopeScheduling(LoadFileScheduling):
        def _split_scope(self, nodeid):
            if helper_scope.uses_helper(nodeid, root):
                return helper_scope.SCOPE
            return super()._split_scope(nodeid)

    return HelperScopeScheduling(config, log)


def pytest_collection_modifyitems(items):
    rank = {name: i for i, name in enumerate(LONG_FIRST)}

    def key(item):
        name = os.path.splitext(os.path.basename(str(item.fspath)))[0]
        return rank.get(name, len(LONG_FIRST))

    items.sort(key=key)  # stable: the order inside a file and among the rest is kept


# (test group) -> {model: status}; printed at the end of the run. Each record also
# rides on the running test's report (user_properties), so that under pytest-xdist
# the controller, which prints the summary, receives the workers' records.
CORPUS_REPORT: dict[str, dict[str, str]] = {}
_KEY = "tiphys_corpus"
_RUNNING = {"item": None}


def record(group: str, model: str, status: str) -> None:
    CORPUS_REPORT.setdefault(group, {})[model] = status
    item = _RUNNING["item"]
    if item is not None:
        item.user_properties.append((_KEY, [group, model, status]))


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_setup(item):
    _RUNNING["item"] = item


# per xdist worker: [seconds of test phases, time of its last report, tests run]: the
# summary shows how evenly the workers were loaded (a long file left to the end
# keeps one core idle)
WORKER_LOAD: dict[str, list] = {}
_SESSION_START = [time.time()]


def pytest_sessionstart(session):
    _SESSION_START[0] = time.time()


def pytest_runtest_logreport(report):
    gateway = getattr(getattr(report, "node", None), "gateway", None)
    load = WORKER_LOAD.setdefault(getattr(gateway, "id", "main"), [0.0, 0.0, 0])
    load[0] += report.duration
    load[1] = time.time() - _SESSION_START[0]
    load[2] += report.when == "call"
    for name, value in getattr(report, "user_properties", ()):
        if name == _KEY:
            group, model, status = value
            CORPUS_REPORT.setdefault(group, {})[model] = status


@pytest.fixture
def report():
    return record


def pytest_terminal_summary(terminalreporter):
    tr = terminalreporter
    if len(WORKER_LOAD) > 1:
        tr.section("tiphys worker load")
        for name, (busy, last, count) in sorted(WORKER_LOAD.items()):
            tr.write_line(f"{name}: {count} tests, {busy:.0f} s in tests, last result at "
                          f"{last:.0f} s")
    if not CORPUS_REPORT:
        return
    tr.section("tiphys corpus report")
    for group, results in sorted(CORPUS_REPORT.items()):
        counts = {}
        for status in results.values():
            key = status.split(":")[0].split(" (")[0]
            counts[key] = counts.get(key, 0) + 1
        summary = ", ".join(f"{k} {v}" for k, v in sorted(counts.items()))
        tr.write_line(f"{group}: {len(results)} models: {summary}")
        for model, status in sorted(results.items()):
            if not status.startswith("match") or os.environ.get("TIPHYS_REPORT_ALL"):
                tr.write_line(f"    {model}: {status}")
