"""Prepared launches (tiphys/launch.py): a kernel launched again with the same
arguments skips Taichi's per-argument Python work, with the same results."""
import gc

import numpy as np
import pytest
import taichi as ti

import tiphys
from tiphys.kernels.consts import WARN_BADCTRL
import tiphys.launch as launch


@ti.kernel
def _axpy(y: ti.types.ndarray(), x: ti.types.ndarray(), a: float, n: ti.i32):
    for i in range(n):
        y[i] += a * x[i]


@ti.kernel
def _total(x: ti.types.ndarray()) -> float:
    s = 0.0
    for i in range(x.shape[0]):
        s += x[i]
    return s


@pytest.fixture(autouse=True)
def _prepared(monkeypatch):
    """Prepared launches on for these tests (whatever the environment says), none left
    behind."""
    monkeypatch.setattr(launch, "ENABLED", True)
    yield
    launch.forget()


def _table(kernel):
    return kernel._primal.__dict__.get("_tiphys_prepared")


def test_repeated_launches_are_prepared_and_give_the_same_results():
    assert ti.lang.kernel_impl.Kernel.__call__ is launch._call
    x = ti.ndarray(ti.f64, 5)
    x.from_numpy(np.arange(5.0))
    y = ti.ndarray(ti.f64, 5)
    y.fill(0.0)
    for _ in range(3):
        _axpy(y, x, 2.0, 5)
    assert np.array_equal(y.to_numpy(), 6.0 * np.arange(5.0))
    assert len(_table(_axpy)) == 1
    _axpy(y, x, -1.0, 3)  # another scalar: another entry, not a stale one
    assert np.array_equal(y.to_numpy(), np.array([0, 5, 10, 18, 24.0]))
    assert len(_table(_axpy)) == 2
    # on a CPU backend each entry is one filled context, launched again every time
    cpu = ti.lang.impl.current_cfg().arch in (ti.x64, ti.arm64)
    assert launch.REPLAY["on"] == (cpu and launch.REPLAY["allowed"])
    assert all((entry.ctx is not None) == launch.REPLAY["on"]
               for entry in _table(_axpy).values())
    # a kernel that returns a value takes Taichi's own path every time
    assert _total(x) == 10.0 and _total(x) == 10.0
    assert _table(_total) is False


def test_a_freed_array_drops_its_entries():
    x = ti.ndarray(ti.f64, 4)
    x.fill(1.0)
    y = ti.ndarray(ti.f64, 4)
    y.fill(0.0)
    _axpy(y, x, 1.0, 4)
    key = _axpy._primal.__dict__["_tiphys_key"]((y, x, 1.0, 4))
    assert key in _table(_axpy)
    del x
    gc.collect()
    assert key not in _table(_axpy)
    z = ti.ndarray(ti.f64, 4)  # may reuse the freed object's id: no stale entry matches
    z.fill(3.0)
    _axpy(y, z, 1.0, 4)
    _axpy(y, z, 1.0, 4)
    assert np.array_equal(y.to_numpy(), np.full(4, 7.0))


@ti.kernel
def _mixed(v: ti.types.ndarray(dtype=ti.math.vec3, ndim=2), mat: ti.types.ndarray(
        dtype=ti.math.mat3, ndim=1), k: ti.types.ndarray(dtype=ti.i32, ndim=1),
           flag: ti.types.ndarray(dtype=ti.u8, ndim=1), s: float, n: ti.i32):
    for i, j in ti.ndrange(v.shape[0], v.shape[1]):
        v[i, j] += s * ti.Vector([i, j, n])
        k[i * v.shape[1] + j] += i + 2 * j
    for i in range(mat.shape[0]):
        mat[i] = mat[i] @ mat[i] + ti.Matrix.identity(float, 3) * s
        flag[i] += ti.u8(1)


@pytest.mark.parametrize("replay", [True, False])
def test_arrays_of_every_kind_launched_again_as_by_taichi(monkeypatch, replay):
    """Vector, matrix, int and byte arrays of several dimensions, scalars: 5 launches
    (prepared, the context filled once and replayed on a CPU backend) give what 5
    launches through Taichi's own path give, including after the arrays are written
    from the host in between."""
    monkeypatch.setitem(launch.REPLAY, "on", replay and launch.REPLAY["on"])
    results = []
    for enabled in (False, True):
        monkeypatch.setattr(launch, "ENABLED", enabled)
        v = ti.Vector.ndarray(3, ti.f64, (3, 4))
        v.from_numpy(np.arange(36.0).reshape(3, 4, 3))
        mat = ti.Matrix.ndarray(3, 3, ti.f64, 2)
        mat.from_numpy(np.linspace(-1, 1, 18).reshape(2, 3, 3))
        k = ti.ndarray(ti.i32, 12)
        k.fill(-3)
        flag = ti.ndarray(ti.u8, 2)
        flag.fill(250)
        for step in range(5):
            _mixed(v, mat, k, flag, 0.5, 7)
            if step == 2:
                v.from_numpy(v.to_numpy() * -1.0)
        results.append([a.to_numpy() for a in (v, mat, k, flag)])
        launch.forget()
    for a, b in zip(*results):
        assert np.array_equal(a, b)
    assert results[1][3].tolist() == [255, 255]


def test_step_is_the_same_with_and_without_prepared_launches(monkeypatch):
    xml = """<mujoco><option integrator="RK4"/><worldbody><geom type="plane" size="1 1 .1"/>
      <body pos="0 0 .02"><freejoint/><geom type="box" size=".1 .05 .03"/></body>
      <body pos=".3 0 .025" euler="0 90 0"><freejoint/><geom type="capsule" size=".03 .1"/></body>
      </worldbody></mujoco>"""
    m = tiphys.load_model_from_string(xml)
    runs = []
    for enabled in (False, True):
        monkeypatch.setattr(launch, "ENABLED", enabled)
        d = tiphys.make_data(m, 3)
        for _ in range(40):
            tiphys.step(m, d)
        runs.append((d.numpy("qpos"), d.numpy("qvel"), d.numpy("ncon")))
    for a, b in zip(*runs):
        assert np.array_equal(a, b)
    assert runs[1][2].min() > 0  # resting on the plane: contacts in every world


def _fresh_notice(monkeypatch, after_s):
    """The compile notice as in a new process, given after ``after_s`` seconds."""
    monkeypatch.setitem(launch._NOTICE, "shown", False)
    monkeypatch.setitem(launch._NOTICE, "spent", 0.0)
    monkeypatch.setattr(launch, "NOTICE_AFTER_S", after_s)


def test_first_launches_say_they_are_compiling(monkeypatch, capsys):
    """A process whose first launches take long prints 'compiling kernels (one-time)'
    once, on stderr, while they run; later launches and later kernels print nothing."""
    _fresh_notice(monkeypatch, 0.0)

    @ti.kernel
    def fresh(x: ti.types.ndarray()):
        for i in range(x.shape[0]):
            x[i] = 2.0 * x[i] + 1.0

    @ti.kernel
    def fresh_too(x: ti.types.ndarray()):
        for i in range(x.shape[0]):
            x[i] = x[i] - 1.0

    x = ti.ndarray(ti.f64, 4)
    fresh(x)
    err = capsys.readouterr().err
    assert err.count("compiling kernels (one-time") == 1, err
    fresh(x)
    fresh_too(x)
    assert "compiling" not in capsys.readouterr().err
    np.testing.assert_array_equal(x.to_numpy(), np.full(4, 2.0))  # (0 * 2 + 1) * 2 + 1 - 1


def test_quick_first_launches_stay_quiet(monkeypatch, capsys):
    _fresh_notice(monkeypatch, 3600.0)

    @ti.kernel
    def quiet(x: ti.types.ndarray()):
        for i in range(x.shape[0]):
            x[i] = 3.0

    x = ti.ndarray(ti.f64, 2)
    quiet(x)
    assert "compiling" not in capsys.readouterr().err
    assert launch._NOTICE["spent"] > 0.0


def test_count_launches_counts_prepared_and_taichi_launches_and_restores_the_patch():
    x = ti.ndarray(ti.f64, 3)
    x.fill(1.0)
    y = ti.ndarray(ti.f64, 3)
    y.fill(0.0)
    _axpy(y, x, 1.0, 3)  # prepared from here on
    with launch.count_launches() as counter:
        for _ in range(4):
            _axpy(y, x, 1.0, 3)  # prepared
        _axpy(y, x, 0.5, 3)  # a new argument tuple: Taichi's own path
        assert _total(x) == 3.0  # returns a value: never prepared
    assert counter["n"] == 6
    assert counter["arrays"] == 5 * 2 + 1  # _axpy's y and x, _total's x
    assert np.array_equal(y.to_numpy(), np.full(3, 5.5))
    assert ti.lang.kernel_impl.Kernel.__call__ is launch._call
    _axpy(y, x, 1.0, 3)
    assert counter["n"] == 6  # nothing counted after the block


@ti.kernel
def _claim_order(counter: ti.types.ndarray(), out: ti.types.ndarray(), n: ti.i32):
    for i in range(n):  # each iteration takes the next slot: in order only when serial
        out[ti.atomic_add(counter[0], 1)] = i


def _tagged(nworld):
    arr = ti.ndarray(ti.i32, 1)
    launch.tag_worlds(arr, nworld)
    arr.fill(0)
    return arr


def test_few_worlds_run_the_serial_twin_and_many_the_world_twin(monkeypatch):
    """On the CPU, a launch given a Data array of at most serial_worlds worlds runs the
    kernel's serial twin (iterations in order), through Taichi's path and then
    prepared; one of more worlds runs its world twin (a plain range loop stays
    parallel there), or the kernel itself with world twins off; one given no Data
    array runs the kernel."""
    if not launch.SERIAL["cpu"]:
        pytest.skip("serial twins exist on the CPU backends only")
    monkeypatch.setitem(launch.SERIAL, "worlds", 4)
    n = 200_000
    out = ti.ndarray(ti.i32, n)
    primal = _claim_order._primal
    counter = _tagged(4)
    for _ in range(2):  # Taichi's path (compiles the twin), then the prepared launch
        counter.fill(0)
        out.fill(-1)
        _claim_order(counter, out, n)
        assert np.array_equal(out.to_numpy(), np.arange(n, dtype=np.int32))
    twin = primal.__dict__["_tiphys_twin"]
    assert twin.compiled_kernels and not primal.compiled_kernels
    assert len(_table(_claim_order)) == 1
    for counter in (_tagged(5), ti.ndarray(ti.i32, 1)):  # more worlds; no Data array
        counter.fill(0)
        out.fill(-1)
        _claim_order(counter, out, n)
        assert np.array_equal(np.sort(out.to_numpy()), np.arange(n, dtype=np.int32))
    world_twin = primal.__dict__["_tiphys_wtwin"]
    assert len(world_twin.compiled_kernels) == 1  # the 5-world launch
    assert len(primal.compiled_kernels) == 1 and len(twin.compiled_kernels) == 1
    monkeypatch.setitem(launch.WORLD_TWINS, "on", False)
    launch.forget()
    counter = _tagged(6)
    _claim_order(counter, out, n)
    assert len(world_twin.compiled_kernels) == 1 and len(primal.compiled_kernels) == 1


def test_the_model_work_picks_serial_or_world_twins(monkeypatch):
    """The same number of worlds runs serial twins for a light model and world twins
    for a heavy one: a Data's serial load is its worlds weighted by the model's work
    (kernels/config.serial_load), compared with serial_worlds; one world is always
    serial. On the CPU Taichi's pass that gives each thread one block of at least 512
    iterations is off, so that a world twin over fewer worlds uses every thread."""
    if not launch.SERIAL["cpu"]:
        pytest.skip("serial twins exist on the CPU backends only")
    assert ti.lang.impl.current_cfg().make_cpu_multithreading_loop is False
    monkeypatch.setitem(launch.SERIAL, "worlds", launch.default_serial_worlds(2))
    light = tiphys.load_model_from_string(
        '<mujoco><worldbody><body><joint type="hinge"/><geom size=".1"/></body>'
        '</worldbody></mujoco>')
    boxes = "".join(f'<body pos="{i} 0 1"><freejoint/><geom type="box" size=".1 .1 .1"/>'
                    f'</body>' for i in range(30))
    heavy = tiphys.load_model_from_string(
        f'<mujoco><worldbody><geom type="plane" size="9 9 .1"/>{boxes}</worldbody></mujoco>')
    for m, nworld, kind in ((light, 64, "serial"), (heavy, 64, "worlds"), (heavy, 1, "serial"),
                            (light, 10_000, "worlds")):
        d = tiphys.make_data(m, nworld)
        assert launch._variant([m.body_mass, d.qpos]) == kind, (m.nv, nworld)
        tiphys.step(m, d)
        assert np.isfinite(d.qpos.to_numpy()).all()


@ti.kernel
def _ndrange_loops(a: ti.types.ndarray(), b: ti.types.ndarray(), c: ti.types.ndarray(),
                   order: ti.types.ndarray(), n: ti.i32):
    for w, i in ti.ndrange(a.shape[0], a.shape[1]):
        a[w, i] = w * 100 + i
    ti.loop_config(block_dim=4)
    for w, i, j in ti.ndrange((1, b.shape[0]), b.shape[1], 3):
        b[w, i, j] = b[w - 1, i, j] * 0 + w * 1000 + i * 10 + j
    for w, i in ti.ndrange(c.shape[0], n):  # each world's slots claimed in order
        c[w, ti.atomic_add(order[w], 1)] = i
    for I in ti.grouped(ti.ndrange(c.shape[0], 2)):  # left as it is
        c[I[0], n + I[1]] = -1


def test_world_twins_run_each_ndrange_loop_over_worlds():
    """A world twin splits each ``ti.ndrange`` loop into a parallel loop over its first
    index and a serial loop over the rest (tuple bounds, three indices, a loop_config
    before it): the same iterations, and within each world the serial order."""
    if not launch.SERIAL["cpu"]:
        pytest.skip("world twins exist on the CPU backends only")
    nworld, n = 3, 20_000  # 3 worlds over 2 threads: a parallel ndrange splits one
    outs = []
    for kind in (None, "worlds"):
        a, b = ti.ndarray(ti.i32, (nworld, 7)), ti.ndarray(ti.i32, (nworld, 5, 3))
        c, order = ti.ndarray(ti.i32, (nworld, n + 2)), ti.ndarray(ti.i32, nworld)
        b.fill(-5)
        order.fill(0)
        kernel = _ndrange_loops._primal if kind is None else launch._twin(
            _ndrange_loops._primal, kind)
        building = launch.SERIAL["building"]
        launch.SERIAL["building"] = kind or False
        try:
            kernel(a, b, c, order, n)
        finally:
            launch.SERIAL["building"] = building
        outs.append((a.to_numpy(), b.to_numpy(), c.to_numpy()))
    w, i = np.meshgrid(np.arange(nworld), np.arange(7), indexing="ij")
    for a_, b_, c_ in outs:
        assert np.array_equal(a_, w * 100 + i)
        assert (b_[0] == -5).all()
        w3, i3, j3 = np.meshgrid(np.arange(1, nworld), np.arange(5), np.arange(3),
                                 indexing="ij")
        assert np.array_equal(b_[1:], w3 * 1000 + i3 * 10 + j3)
        assert (c_[:, n:] == -1).all()
        assert np.array_equal(np.sort(c_[:, :n], axis=1), np.tile(np.arange(n), (nworld, 1)))
    # in the world twin each world's slots are claimed in order (one thread a world),
    # every time
    assert np.array_equal(outs[1][2][:, :n], np.tile(np.arange(n), (nworld, 1)))


def test_world_loops_merged_in_world_twins(monkeypatch):
    """A world twin of a PER_WORLD_KERNELS kernel runs each run of consecutive loops
    over the same worlds as one parallel loop, each world's loops in order inside it
    (split ndrange loops with their own rows, and plain range loops); a statement
    between loops or another bound starts a new run."""
    import ast
    from taichi.lang.ast.ast_transformer import ASTTransformer

    def decorator(ctx, node):
        return "ndrange" if ast.unparse(node).startswith("ti.ndrange(") else ""
    monkeypatch.setattr(ASTTransformer, "get_decorator", staticmethod(decorator))
    src = ("for w, i in ti.ndrange(nw, nv):\n    a[w, i] = 1\n"
           "for worldid, r in ti.ndrange(nw, njmax):\n    if r < nefc[worldid]:\n"
           "        b[worldid, r] = a[worldid, 0]\n"
           "for k in range(nw):\n    c[k] = b[k, 0]\n"
           "x = 1\n"
           "for w, i in ti.ndrange(nw, nv):\n    a[w, i] += x\n"
           "for w in range(other):\n    d[w] = 0\n"
           "for w, i in ti.ndrange(nw, nv):\n    a[w, i] += 2\n")
    body = launch._merge_world_loops(None, ast.parse(src).body)
    want = ("for _tiphys_world in range(nw):\n"
            "    for i in ti.ndrange(nv):\n        a[_tiphys_world, i] = 1\n"
            "    for r in range(min(njmax, nefc[_tiphys_world])):\n"
            "        b[_tiphys_world, r] = a[_tiphys_world, 0]\n"
            "    if ti.static(True):\n        c[_tiphys_world] = b[_tiphys_world, 0]\n"
            "x = 1\n"
            "for w, i in ti.ndrange(nw, nv):\n    a[w, i] += x\n"
            "for w in range(other):\n    d[w] = 0\n"
            "for w, i in ti.ndrange(nw, nv):\n    a[w, i] += 2")
    assert ast.unparse(ast.Module(body=body, type_ignores=[])) == want


@ti.kernel
def _per_world_loops(a: ti.types.ndarray(), b: ti.types.ndarray(), t: ti.types.ndarray()):
    for w, i in ti.ndrange(a.shape[0], a.shape[1]):
        a[w, i] = w * 10.0 + i
    for w, i in ti.ndrange(a.shape[0], a.shape[1]):
        b[w, i] = a[w, a.shape[1] - 1 - i] * 2.0
    for w in range(a.shape[0]):
        s = 0.0
        for i in range(a.shape[1]):
            s += b[w, i]
        t[w] = s


def test_merged_world_loops_compute_what_the_kernel_computes(monkeypatch):
    """The merged world twin of a per-world kernel gives the kernel's results."""
    if not launch.SERIAL["cpu"]:
        pytest.skip("world twins exist on the CPU backends only")
    monkeypatch.setattr(launch, "PER_WORLD_KERNELS",
                        launch.PER_WORLD_KERNELS | {"_per_world_loops"})
    merged = []
    merge = launch._merge_world_loops

    def counting(ctx, body):
        out = merge(ctx, body)
        merged.append((len(body), len(out)))
        return out
    monkeypatch.setattr(launch, "_merge_world_loops", counting)
    outs = []
    for kind in (None, "worlds"):
        a, b, t = ti.ndarray(float, (100, 9)), ti.ndarray(float, (100, 9)), ti.ndarray(float, 100)
        kernel = _per_world_loops._primal if kind is None else launch._twin(
            _per_world_loops._primal, kind)
        building = launch.SERIAL["building"]
        launch.SERIAL["building"] = kind or False
        try:
            kernel(a, b, t)
        finally:
            launch.SERIAL["building"] = building
        outs.append((a.to_numpy(), b.to_numpy(), t.to_numpy()))
    w, i = np.meshgrid(np.arange(100), np.arange(9), indexing="ij")
    assert np.array_equal(outs[0][0], w * 10.0 + i)
    assert np.array_equal(outs[0][2], (outs[0][1]).sum(1))
    for x, y in zip(*outs):
        assert np.array_equal(x, y)
    assert merged == [(3, 1)]  # the world twin's three loops, built as one


def test_twin_row_loops(monkeypatch):
    """The (world, row) loops a twin builds, as source: a loop whose only statement
    tests the row against a per-world count visits that many rows per world; other
    loops are left as they are."""
    import ast
    from taichi.lang.ast.ast_transformer import ASTTransformer

    def decorator(ctx, node):
        return "ndrange" if ast.unparse(node).startswith("ti.ndrange(") else ""
    monkeypatch.setattr(ASTTransformer, "get_decorator", staticmethod(decorator))
    cases = {
        "for w, i in ti.ndrange(nw, njmax):\n    if i < nefc[w]:\n        a[w, i] = b[w, i]":
            "for w in range(nw):\n    for i in range(min(njmax, nefc[w])):\n"
            "        a[w, i] = b[w, i]",
        # not this shape: another statement, an else, another test, a count not of
        # this world, the count named in the body, a break, three indices
        "for w, i in ti.ndrange(nw, n):\n    x = 1\n    if i < c[w]:\n        a[w, i] = x":
            None,
        "for w, i in ti.ndrange(nw, n):\n    if i < c[w]:\n        a[w, i] = 1\n"
        "    else:\n        a[w, i] = 0": None,
        "for w, i in ti.ndrange(nw, n):\n    if i <= c[w]:\n        a[w, i] = 1": None,
        "for w, i in ti.ndrange(nw, n):\n    if i < c[0]:\n        a[w, i] = 1": None,
        "for w, i in ti.ndrange(nw, n):\n    if i < c[w]:\n        c[w] = 1": None,
        "for w, i in ti.ndrange(nw, n):\n    if i < c[w]:\n        f(c, w)": None,
        "for w, i in ti.ndrange(nw, n):\n    if i < c[w]:\n        break": None,
        "for w, i, j in ti.ndrange(nw, n, 3):\n    if i < c[w]:\n        a[w, i] = j":
            None,
        "for w, i in ti.ndrange((1, nw), n):\n    if i < c[w]:\n        a[w, i] = 1":
            None,
    }
    for source, expected in cases.items():
        split = launch._split_ndrange(None, ast.parse(source).body[0])
        rows = None if split is None else ast.unparse(launch._own_rows(split))
        # expected None: no row rewrite (the loop as _split_ndrange makes it, if at all)
        if expected is None:
            assert split is None or rows == ast.unparse(
                launch._split_ndrange(None, ast.parse(source).body[0])), source
        else:
            assert rows == expected, source


def test_world_twin_loop_split(monkeypatch):
    """The loops a world twin builds, as source: ndrange loops split after their first
    index (tuple bounds kept), anything else left to Taichi as it is."""
    import ast
    from taichi.lang.ast.ast_transformer import ASTTransformer

    def decorator(ctx, node):
        return "ndrange" if ast.unparse(node).startswith("ti.ndrange(") else ""
    monkeypatch.setattr(ASTTransformer, "get_decorator", staticmethod(decorator))
    cases = {
        "for w, i in ti.ndrange(nw, n):\n    a[w, i] = 1":
            "for w in range(nw):\n    for i in ti.ndrange(n):\n        a[w, i] = 1",
        "for w, i, j in ti.ndrange((1, nw), n, 3):\n    b[w, i, j] = 2":
            "for w in range(1, nw):\n    for i, j in ti.ndrange(n, 3):\n        b[w, i, j] = 2",
        "for I in ti.ndrange(nw, n):\n    c[I] = 3": None,  # one index for two dimensions
        "for i in ti.ndrange(n):\n    c[i] = 4": None,  # nothing to split
        "for i in range(n):\n    c[i] = 5": None,
        "for w, i in ti.ndrange(nw, n):\n    pass\nelse:\n    pass": None,
        "for w, i in ti.ndrange(nw, n):\n    if a[w, i]:\n        break": None,
    }
    for source, expected in cases.items():
        node = ast.parse(source).body[0]
        split = launch._split_ndrange(None, node)
        assert (None if split is None else ast.unparse(split)) == expected, source


def test_step_is_bit_identical_with_serial_and_parallel_loops(monkeypatch):
    """Every stage gives the same bits from its serial twin, its world twin and its
    parallel kernel (a step with contacts, a tendon, actuators, sensors, RK4; a bad
    control in one world for ten steps: the same forces and warning counts)."""
    if not launch.SERIAL["cpu"]:
        pytest.skip("serial twins exist on the CPU backends only")
    xml = """<mujoco><option integrator="RK4"/><worldbody><geom type="plane" size="1 1 .1"/>
      <site name="a" pos="0 0 .5"/>
      <body pos="0 0 .02"><freejoint/><geom type="box" size=".1 .05 .03"/><site name="b"/></body>
      <body pos=".3 0 .3"><joint name="h" type="hinge" axis="0 1 0"/>
        <geom type="capsule" size=".03 .1"/></body>
      </worldbody><tendon><spatial name="t"><site site="a"/><site site="b"/></spatial></tendon>
      <actuator><motor joint="h"/><position joint="h" kp="2"/></actuator>
      <sensor><framepos objtype="site" objname="b"/><tendonpos tendon="t"/><accelerometer site="b"/>
      </sensor></mujoco>"""
    m = tiphys.load_model_from_string(xml)
    runs = []
    for worlds, world_twins in ((0, False), (0, True), (8, True)):
        monkeypatch.setitem(launch.SERIAL, "worlds", worlds)
        monkeypatch.setitem(launch.WORLD_TWINS, "on", world_twins)
        d = tiphys.make_data(m, 3)
        ctrl = np.array([[0.3, 0.1], [-0.2, 0.2], [0.1, -0.4]])
        d.ctrl.from_numpy(ctrl)
        for k in range(30):
            if k in (10, 20):
                ctrl[1, 1] = np.nan if k == 10 else 0.2
                d.ctrl.from_numpy(ctrl)
            tiphys.step(m, d)
        runs.append([d.numpy(f) for f in ("qpos", "qvel", "qacc", "sensordata", "efc_force",
                                           "actuator_force", "warning_number")])
    # (counted in each of RK4's four forward passes, as mj_RungeKutta's)
    assert runs[0][-1][1, WARN_BADCTRL] == 40 and runs[0][-1][[0, 2], WARN_BADCTRL].sum() == 0
    for other in runs[1:]:
        for a, b in zip(runs[0], other):
            assert np.array_equal(a, b)


def test_a_function_source_is_read_once_per_process(monkeypatch):
    """tiphys keeps each function's source after Taichi first reads it (backend.py
    _tree_and_ctx): a ti.func inlined by two kernels is read once, and each kernel
    still compiles from its own (and a same-named new function from its own) source."""
    from taichi.lang import kernel_impl as ki
    read = []
    original = ki.getsourcelines

    def counting(func):
        read.append(func.__name__)
        return original(func)

    monkeypatch.setattr(ki, "getsourcelines", counting)

    def make(k):
        @ti.func
        def times(x):
            return k * x

        @ti.kernel
        def first(out: ti.types.ndarray()):
            out[0] = times(3)

        @ti.kernel
        def second(out: ti.types.ndarray()):
            out[0] = times(4) + 1
        return first, second

    out = np.zeros(1, dtype=np.int32)
    for k in (2, 5):
        first, second = make(k)
        first(out)
        assert out[0] == 3 * k
        second(out)
        assert out[0] == 4 * k + 1
    assert read.count("times") == 2 and read.count("first") == 2, read
