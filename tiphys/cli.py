"""The ``tiphys`` command line: ``info``, ``run``, ``bench``, ``view``, ``render``.

Exit codes: 0 success; 1 internal failure (a compiler bug, non-finite results);
2 bad input (a model that does not compile, a bad option, a model feature tiphys
does not support yet).
"""

import argparse
import os
import subprocess
import sys
import time
import warnings
from collections import Counter
from typing import Optional, Sequence

import numpy as np
import taichi as ti
from rich.console import Console
from rich.markup import escape
from rich.progress import (BarColumn, MofNCompleteColumn, Progress, SpinnerColumn, TextColumn,
                           TimeRemainingColumn)
from rich.table import Table

from . import backend
from .errors import ModelError
from .kernels.consts import GEOM_TYPE_NAMES, JNT_BALL, JNT_FREE, JOINT_TYPE_NAMES, WARNING_NAMES
from .launch import count_launches
from .scenes import scene_path
from .scenes.gait import GaitDriver, gait_for

# Sizes always shown by `info` (others are shown when non-zero).
_KEY_SIZES = ("nq", "nv", "nu", "na", "nbody", "njnt", "ntree", "ngeom", "nsite", "ncam",
              "nlight", "nmesh", "nhfield", "nmat", "ntex", "nkey", "nmocap")

# Where each MJCF element is counted by `info`, section by section.
_BODY_TAGS = ("body", "joint", "freejoint", "geom", "site", "camera", "light", "inertial",
              "frame", "replicate")

EXIT_OK, EXIT_FAILURE, EXIT_BAD_INPUT = 0, 1, 2


# --------------------------------------------------------------------------- helpers


def random_qpos(m, nworld: int, rng: np.random.Generator, scale: float = 0.5) -> np.ndarray:
    """``nworld`` random joint configurations around ``qpos0``, shape (nworld, nq).

    ``m`` is anything with MuJoCo's model arrays (``qpos0``, ``jnt_type``,
    ``jnt_qposadr``, ``jnt_limited``, ``jnt_range``): a ``mujoco.MjModel`` or
    ``tiphys.Model.arrays``. Limited hinges and slides are drawn uniformly in
    their range; free and ball joints get perturbed, renormalised quaternions.
    """
    qpos0 = np.asarray(m.qpos0, dtype=np.float64).reshape(-1)
    qpos = np.tile(qpos0, (nworld, 1))
    jnt_type = np.asarray(m.jnt_type).reshape(-1)
    jnt_qposadr = np.asarray(m.jnt_qposadr).reshape(-1)
    jnt_limited = np.asarray(m.jnt_limited).reshape(-1)
    jnt_range = np.asarray(m.jnt_range, dtype=np.float64).reshape(-1, 2)
    for jntid, jtype in enumerate(jnt_type):
        adr = int(jnt_qposadr[jntid])
        if jtype in (JNT_FREE, JNT_BALL):
            if jtype == JNT_FREE:
                qpos[:, adr:adr + 3] += 0.2 * scale * rng.standard_normal((nworld, 3))
                adr += 3
            quat = qpos[:, adr:adr + 4] + scale * rng.standard_normal((nworld, 4))
            qpos[:, adr:adr + 4] = quat / np.linalg.norm(quat, axis=1, keepdims=True)
        elif jnt_limited[jntid] and jnt_range[jntid, 0] < jnt_range[jntid, 1]:
            lo, hi = jnt_range[jntid]
            qpos[:, adr] = rng.uniform(lo, hi, nworld)
        else:
            qpos[:, adr] += scale * rng.standard_normal(nworld)
    return qpos


def ensure_backend(arch: str, precision: str) -> None:
    """Initialise Taichi with these settings; a process that already runs them (a test
    session, a notebook) keeps its backend, and one that runs others gets
    backend.InitError (tiphys.init never switches silently)."""
    backend.init(arch=arch, precision=precision)


def running_arch() -> str:
    """The backend Taichi actually runs on (it falls back to the CPU, 'x64', silently)."""
    import taichi as ti

    name = ti.lang.impl.current_cfg().arch.name
    return "cpu" if name in ("x64", "arm64") else name


def spec_counts(spec) -> list[tuple[str, str, int]]:
    """(section, element, count) for every MJCF element that defines something.

    Counted on the parsed Spec (includes expanded), so it works for models the
    compiler cannot compile yet. Elements inside ``<default>`` are not counted.
    """
    rows: list[tuple[str, str, int]] = []
    body = Counter()
    for section in spec.sections("worldbody"):
        for el in section.iter():
            if el is not section and el.tag in _BODY_TAGS:
                body[el.tag] += 1
    body["body"] += 1  # the world body
    for tag in _BODY_TAGS:
        if body[tag]:
            rows.append(("worldbody", tag, body[tag]))
    for section_tag in ("asset", "keyframe", "custom", "contact", "equality", "tendon",
                        "actuator", "sensor", "deformable", "extension"):
        counts = Counter()
        for section in spec.sections(section_tag):
            for child in section.children:
                counts[child.tag] += 1
        for tag, n in sorted(counts.items()):
            rows.append((section_tag, tag, n))
    return rows


def later_sections(spec) -> list[tuple[str, str, int]]:
    """(section, what, count) for each section in ``spec`` the compiler does not handle yet."""
    from .compiler import compile as compile_module

    later = getattr(compile_module, "_LATER", {})
    rows = []
    for tag, what in later.items():
        n = sum(len(section.children) for section in spec.sections(tag))
        if n:
            rows.append((tag, what, n))
    return rows


def _not_compiled_feature(message: str) -> str:
    """The short feature name of a NotImplementedError message, e.g. 'tendons'."""
    if "(" in message and ")" in message:
        return message[message.rfind("(") + 1:message.rfind(")")]
    return message.split(": ")[-1]


def _options_table(opt) -> Table:
    from .compiler.options import (CONES, DISABLE_FLAGS, ENABLE_FLAGS, INTEGRATORS, JACOBIANS,
                                   SOLVERS)

    def name_of(table: dict, value: int) -> str:
        for k, v in table.items():
            if v == value:
                return k
        return str(value)

    def vec(v) -> str:
        return " ".join(f"{float(x):g}" for x in v)

    disabled = [f for i, f in enumerate(DISABLE_FLAGS) if opt.disableflags & (1 << i)]
    enabled = [f for i, f in enumerate(ENABLE_FLAGS) if opt.enableflags & (1 << i)]
    table = Table(title="Options", show_header=True, header_style="bold")
    table.add_column("option")
    table.add_column("value")
    rows = [
        ("timestep", f"{opt.timestep:g}"),
        ("integrator", name_of(INTEGRATORS, opt.integrator)),
        ("solver", name_of(SOLVERS, opt.solver)),
        ("cone", name_of(CONES, opt.cone)),
        ("jacobian", name_of(JACOBIANS, opt.jacobian)),
        ("iterations / ls_iterations", f"{opt.iterations} / {opt.ls_iterations}"),
        ("tolerance", f"{opt.tolerance:g}"),
        ("gravity", vec(opt.gravity)),
        ("wind", vec(opt.wind)),
        ("density / viscosity", f"{opt.density:g} / {opt.viscosity:g}"),
        ("disabled", ", ".join(disabled) or "-"),
        ("enabled", ", ".join(enabled) or "-"),
    ]
    for k, v in rows:
        table.add_row(k, v)
    return table


def _sizes_table(sizes: dict) -> Table:
    from .types import MODEL_SIZES

    shown = [k for k in MODEL_SIZES if k in sizes and (k in _KEY_SIZES or sizes[k])]
    shown.sort(key=lambda k: (_KEY_SIZES.index(k) if k in _KEY_SIZES else len(_KEY_SIZES)))
    table = Table(title="Sizes (compiled model)", header_style="bold")
    ncols = 4
    for _ in range(ncols):
        table.add_column("size")
        table.add_column("value", justify="right")
    for start in range(0, len(shown), ncols):
        row = []
        for k in shown[start:start + ncols]:
            row += [k, str(int(sizes[k]))]
        row += [""] * (2 * ncols - len(row))
        table.add_row(*row)
    return table


def _types_table(arrays) -> Table:
    table = Table(title="Elements by type (compiled model)", header_style="bold")
    table.add_column("element")
    table.add_column("type")
    table.add_column("count", justify="right")
    for label, types, values in (("joint", JOINT_TYPE_NAMES, arrays.jnt_type),
                                 ("geom", GEOM_TYPE_NAMES, arrays.geom_type)):
        counts = Counter(int(t) for t in np.asarray(values).reshape(-1))
        for t, n in sorted(counts.items()):
            table.add_row(label, types[t] if 0 <= t < len(types) else str(t), str(n))
    ncam, nlight = arrays.sizes["ncam"], arrays.sizes["nlight"]
    if ncam:
        table.add_row("camera", "(all modes)", str(ncam))
    if nlight:
        table.add_row("light", "(all modes)", str(nlight))
    nmocap = arrays.sizes.get("nmocap", 0)
    if nmocap:
        table.add_row("body", "mocap", str(nmocap))
    return table


def _spec_table(rows) -> Table:
    table = Table(title="Elements in the MJCF (parsed spec, includes expanded)",
                  header_style="bold")
    table.add_column("section")
    table.add_column("element")
    table.add_column("count", justify="right")
    for section, tag, n in rows:
        table.add_row(section, tag, str(n))
    return table


def _ms(seconds: float) -> str:
    return f"{seconds * 1e3:.1f} ms" if seconds < 10 else f"{seconds:.1f} s"


# --------------------------------------------------------------------------- commands


def cmd_info(args, out: Console, err: Console) -> int:
    from .api import load_spec
    from .compiler.compile import compile_spec
    from .compiler.options import read_option

    path = args.model or scene_path()
    t0 = time.perf_counter()
    spec = load_spec(path)
    t_parse = time.perf_counter() - t0

    arrays, not_compiled, internal = None, None, None
    t0 = time.perf_counter()
    try:
        arrays = compile_spec(spec)
    except NotImplementedError as exc:
        not_compiled = str(exc)
    except ModelError:
        raise
    except Exception as exc:  # a compiler bug: report it, still show the spec
        if args.traceback:
            raise
        internal = f"{type(exc).__name__}: {exc}"
    t_compile = time.perf_counter() - t0

    out.print(f"[bold]{escape(spec.model_name)}[/bold]  ({escape(os.path.abspath(path))})",
              soft_wrap=True)
    from .model import octree_sdf_refusal
    unsimulated = octree_sdf_refusal(arrays, getattr(arrays, "names", None)) \
        if arrays is not None else None
    if unsimulated is not None:
        out.print(f"[yellow]not supported yet[/yellow]: "
                  f"{escape(_not_compiled_feature(unsimulated))} — tiphys compiles this "
                  f"model but cannot simulate it yet (make_data refuses it).\n  "
                  f"{escape(unsimulated)}", soft_wrap=True)
    elif arrays is not None:
        out.print("[green]compiled[/green]: every section of this model is supported",
                  soft_wrap=True)
    elif not_compiled is not None:
        feature = _not_compiled_feature(not_compiled)
        out.print(f"[yellow]not supported yet[/yellow]: {escape(feature)} — tiphys cannot "
                  f"compile this model, because it does not support this feature yet; "
                  f"showing what the parser read.\n  {escape(not_compiled)}", soft_wrap=True)
        pending = later_sections(spec)
        if pending:
            listed = ", ".join(f"<{tag}> {what} ({n})" for tag, what, n in pending)
            out.print(f"  sections not supported yet in this model: {escape(listed)}",
                      soft_wrap=True)
    else:
        out.print(f"[red]internal compiler error[/red]: {escape(internal)} (rerun with "
                  f"--traceback and report it)", soft_wrap=True)

    if arrays is not None:
        out.print(_sizes_table(arrays.sizes))
        out.print(_types_table(arrays))
        opt = arrays.opt
    else:
        try:
            opt = read_option(spec)
        except (ModelError, NotImplementedError):
            opt = None
    out.print(_spec_table(spec_counts(spec)))
    if opt is not None:
        out.print(_options_table(opt))

    timing = Table(title="Timing", header_style="bold")
    timing.add_column("phase")
    timing.add_column("time", justify="right")
    timing.add_row("parse (MJCF -> spec)", _ms(t_parse))
    if arrays is not None:
        timing.add_row("compile (spec -> host arrays)", _ms(t_compile))
        if args.device:
            from .model import Model
            ensure_backend(args.arch, _precision(args))
            t0 = time.perf_counter()
            Model(arrays)
            timing.add_row(f"upload to device ({args.arch}, {_precision(args)})",
                           _ms(time.perf_counter() - t0))
    out.print(timing)
    return EXIT_FAILURE if internal else EXIT_OK


def _precision(args) -> str:
    return args.precision or ("f64" if args.arch == "cpu" else "f32")


# --------------------------------------------------------------------------- run

RUN_CHUNK = 10  # steps between progress updates (and the samples of the statistics)
RUN_NWORLD, RUN_STEPS = 256, 400  # `tiphys run` defaults: about a minute on 2 CPU cores


def free_root(m):
    """(body id, qpos address) of the first free joint's body, or None."""
    a = m.arrays
    jnt_type = np.asarray(a.jnt_type).reshape(-1)[:m.njnt]
    free = np.flatnonzero(jnt_type == JNT_FREE)
    if not len(free):
        return None
    jntid = int(free[0])
    return (int(np.asarray(a.jnt_bodyid).reshape(-1)[jntid]),
            int(np.asarray(a.jnt_qposadr).reshape(-1)[jntid]))


class RunStats:
    """Per-world statistics sampled every chunk of ``tiphys run`` (host copies)."""

    def __init__(self):
        self.samples = {"ncon": [], "nefc": [], "solver_niter": []}

    def sample(self, d) -> dict:
        now = {k: d.numpy(k) for k in self.samples}
        # a world's iterations: those of its slowest island (island 0 when solved whole)
        now["solver_niter"] = now["solver_niter"].max(axis=1)
        for k, v in now.items():
            self.samples[k].append(v)
        return now

    def mean(self, name) -> float:
        return float(np.mean(self.samples[name])) if self.samples[name] else float("nan")

    def max(self, name) -> int:
        return int(np.max(self.samples[name])) if self.samples[name] else 0


def cmd_run(args, out: Console, err: Console) -> int:
    from .api import compile_model, load_spec
    from .forward import step
    from .kernels.solver import SOLVER_NAMES
    from .model import id2name, make_data, reset_data

    if args.nworld < 1 or args.steps < 1:
        err.print("[red]error[/red]: --nworld and --steps must be >= 1")
        return EXIT_BAD_INPUT
    precision = _precision(args)
    path = args.model or scene_path()
    rng = np.random.default_rng(args.seed)

    progress = Progress(SpinnerColumn(), TextColumn("{task.description}"),
                        BarColumn(bar_width=16), MofNCompleteColumn(), TimeRemainingColumn(),
                        TextColumn("{task.fields[info]}"), console=err)
    timings = {}
    with progress, warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        setup = progress.add_task("setting up", total=4, info="")
        progress.update(setup, description=f"starting Taichi ({args.arch}, {precision})")
        t0 = time.perf_counter()
        ensure_backend(args.arch, precision)
        timings["init"] = time.perf_counter() - t0
        device = running_arch()
        progress.update(setup, advance=1, description="compiling the model")
        t0 = time.perf_counter()
        spec = load_spec(path)
        m = compile_model(spec)
        timings["model"] = time.perf_counter() - t0
        progress.update(setup, advance=1, description=f"allocating {args.nworld} worlds")
        t0 = time.perf_counter()
        d = make_data(m, args.nworld)
        gait = gait_for(m)
        driver = GaitDriver(gait, rng.uniform(0.0, 2 * np.pi, args.nworld), d)
        timings["data"] = time.perf_counter() - t0
        progress.update(setup, advance=1, description="first step: Taichi compile")
        t0 = time.perf_counter()
        driver.apply(d)
        step(m, d)
        ti.sync()
        timings["first"] = time.perf_counter() - t0
        with count_launches() as launches:
            driver.apply(d)
            step(m, d)
        ti.sync()
        reset_data(m, d)  # the timed run starts from the initial state
        progress.update(setup, advance=1, description="ready")

        root = free_root(m)
        qpos0 = d.numpy("qpos")
        stats = RunStats()
        task = progress.add_task("stepping", total=args.steps, info="")
        t_step = t_sample = 0.0
        done = 0
        while done < args.steps:
            n = min(RUN_CHUNK, args.steps - done)
            t0 = time.perf_counter()
            for _ in range(n):
                driver.apply(d)
                step(m, d)
            ti.sync()
            t1 = time.perf_counter()
            now = stats.sample(d)
            info = (f"{args.nworld * (done + n) / (t_step + t1 - t0):,.0f} world-steps/s, "
                    f"{now['ncon'].mean():.1f} contacts")
            if root is not None:
                xy = d.numpy("qpos")[:, root[1]:root[1] + 2] - qpos0[:, root[1]:root[1] + 2]
                info += f", walked {np.linalg.norm(xy, axis=1).mean():.2f} m"
            t_sample += time.perf_counter() - t1
            t_step += t1 - t0
            done += n
            progress.update(task, advance=n, info=info)

    qpos = d.numpy("qpos")
    finite = bool(np.isfinite(qpos).all() and np.isfinite(d.numpy("qvel")).all())
    warning_number = d.numpy("warning_number")
    per_step = t_step / args.steps
    sim_time = args.steps * m.opt.timestep
    table = Table(title=f"tiphys run: {escape(spec.model_name)}, {args.nworld} worlds x "
                        f"{args.steps} steps", header_style="bold")
    table.add_column("quantity")
    table.add_column("value")
    flagged = warning_number.sum(axis=1) > 0
    by_kind = ", ".join(f"{name.upper()} in {int((warning_number[:, k] > 0).sum())}"
                        for k, name in enumerate(WARNING_NAMES)
                        if (warning_number[:, k] > 0).any())
    solver = SOLVER_NAMES.get(m.opt.solver, str(m.opt.solver))
    rows = [
        ("model", f"{os.path.basename(path)}: nq {m.nq}, nv {m.nv}, nu {m.nu}, "
                  f"ngeom {m.ngeom}"),
        ("arch / precision", f"{args.arch} / {precision}" + (
            "" if device in (args.arch, "gpu") else f" (Taichi runs on {device})")),
        ("control", gait.description),
        ("Taichi init", _ms(timings["init"])),
        ("model compile + upload", _ms(timings["model"])),
        ("make_data", _ms(timings["data"])),
        ("first step (Taichi compile)", _ms(timings["first"]) + " (not in the rates)"),
        ("kernel launches per step", f"{launches['n']} (control included)"),
        ("time per step", f"{per_step * 1e3:.2f} ms (all worlds)"),
        ("steps/s", f"{1.0 / per_step:,.1f}"),
        ("world-steps/s", f"{args.nworld / per_step:,.0f}"),
        ("real-time factor", f"{m.opt.timestep / per_step:.3f} per world, "
                             f"{args.nworld * m.opt.timestep / per_step:,.1f} all worlds"),
        ("simulated time", f"{sim_time:.3f} s per world"),
        ("contacts / world", f"{stats.mean('ncon'):.2f} mean, {stats.max('ncon')} max "
                             f"(nconmax {d.nconmax})"),
        ("constraint rows / world", f"{stats.mean('nefc'):.1f} mean, {stats.max('nefc')} max "
                                    f"(njmax {d.njmax})"),
        ("solver iterations", f"{stats.mean('solver_niter'):.2f} mean, "
                              f"{stats.max('solver_niter')} max ({solver}, limit "
                              f"{m.opt.iterations})"),
        ("worlds with warnings", f"{int(flagged.sum())}" + (f" ({by_kind})" if by_kind else "")),
    ]
    messages = sorted({str(w.message) for w in caught})
    if messages:
        rows.append(("engine warnings", f"{len(messages)} distinct (printed below)"))
    if root is not None:
        bodyid, adr = root
        name = id2name(m, "body", bodyid) or f"body {bodyid}"
        height = qpos[:, adr + 2]
        walked = qpos[:, adr:adr + 2] - qpos0[:, adr:adr + 2]
        up = d.numpy("xmat")[:, bodyid, 2, 2]
        rows += [
            (f"{name} height", f"{height.mean():.3f} m mean at the end "
                               f"({height.min():.3f}..{height.max():.3f})"),
            (f"{name} distance walked", f"{np.linalg.norm(walked, axis=1).mean():.3f} m mean "
                                        f"(x {walked[:, 0].mean():+.3f}, "
                                        f"y {walked[:, 1].mean():+.3f})"),
            (f"{name} upright", f"{int((up > 0.5).sum())} of {args.nworld} worlds at the end"),
        ]
    rows += [
        ("statistics readback", f"{t_sample * 1e3:.1f} ms, every {RUN_CHUNK} steps "
                                "(not in the rates)"),
        ("results finite", "yes" if finite else "NO"),
    ]
    for k, v in rows:
        table.add_row(k, v)
    out.print(table)
    for message in messages:
        err.print(f"[yellow]warning[/yellow]: {escape(message)}", soft_wrap=True)
    if not finite:
        err.print("[red]non-finite positions or velocities in the results[/red]")
        return EXIT_FAILURE
    return EXIT_OK


BENCHES = ["kinematics", "step"]  # benchmarks/run.py's BENCHES


def bench_out_default() -> str:
    """Where `tiphys bench` writes by default: the user's cache, not the checkout."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "tiphys", "bench")


def bench_argv(args) -> list[str]:
    """benchmarks/run.py's command line for the parsed `tiphys bench` arguments."""
    unknown = [b for b in args.benches if b not in BENCHES]
    if unknown:
        raise ValueError(f"unknown benchmark {', '.join(unknown)}: choose from "
                         f"{', '.join(BENCHES)}")
    argv = list(args.benches)
    if args.nworld:
        if min(args.nworld) < 1:
            raise ValueError("--nworld values must be >= 1")
        argv += ["--nworld", *map(str, args.nworld)]
    if args.steps < 1:
        raise ValueError("--steps must be >= 1")
    argv += ["--steps", str(args.steps)]
    if args.precision:
        argv += ["--precision", *args.precision]
    if args.scene:
        argv += ["--scene", *args.scene]
    if args.quick:
        argv.append("--quick")
    argv += ["--out", os.path.abspath(args.out or bench_out_default())]
    return argv


def cmd_bench(args, out: Console, err: Console) -> int:
    runner = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                          "benchmarks", "run.py")
    try:
        argv = bench_argv(args)
        if args.out and os.path.exists(args.out) and not os.path.isdir(args.out):
            raise ValueError(f"--out {args.out}: not a folder")
    except ValueError as exc:
        err.print(f"[red]error[/red]: {escape(str(exc))}", soft_wrap=True)
        return EXIT_BAD_INPUT
    if not os.path.isfile(runner):
        err.print("[red]tiphys bench[/red] runs benchmarks/run.py from a source checkout; "
                  "this installation has none. Clone the repository and run `make bench`.",
                  soft_wrap=True)
        return EXIT_BAD_INPUT
    return subprocess.call([sys.executable, runner, *argv])


# --------------------------------------------------------------------------- view, render

IMAGE_EXTS = (".png", ".jpg", ".jpeg", ".bmp", ".tif", ".tiff", ".webp")
VIDEO_EXTS = (".mp4", ".gif")


def output_kind(path: str) -> str:
    """'image' or 'video' from the output's extension; ValueError if neither."""
    ext = os.path.splitext(path)[1].lower()
    if ext in IMAGE_EXTS:
        return "image"
    if ext in VIDEO_EXTS:
        return "video"
    raise ValueError(f"cannot tell the output format of '{path}': use an image "
                     f"({', '.join(IMAGE_EXTS)}) or a video ({', '.join(VIDEO_EXTS)})")


def check_writable(path: str) -> None:
    """A clear error before any work when ``path`` cannot be written."""
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        raise ValueError(f"cannot write '{path}': the folder {folder} does not exist")
    if os.path.isdir(path):
        raise ValueError(f"cannot write '{path}': it is a folder")
    if not os.access(folder, os.W_OK) or (os.path.exists(path) and
                                            not os.access(path, os.W_OK)):
        raise ValueError(f"cannot write '{path}': permission denied")


def video_writer(path: str, fps: float):
    """An imageio-ffmpeg writer for .mp4 (the optional 'video' extra) or a GIF writer."""
    if path.lower().endswith(".gif"):
        return _GifWriter(path, fps)
    try:
        import imageio.v2 as imageio
        import imageio_ffmpeg  # noqa: F401 - the ffmpeg binary comes with it
    except ImportError:
        raise ImportError("writing .mp4 needs imageio and imageio-ffmpeg: install the "
                          "optional extra with `pip install 'tiphys[video]'` (or write a "
                          ".gif, which needs nothing more)") from None
    return imageio.get_writer(path, fps=fps, codec="libx264", quality=8,
                              macro_block_size=1)


class _GifWriter:
    def __init__(self, path, fps):
        self.path, self.fps, self.frames = path, fps, []

    def append_data(self, frame):
        from PIL import Image
        self.frames.append(Image.fromarray(frame))

    def close(self):
        if self.frames:
            self.frames[0].save(self.path, save_all=True, append_images=self.frames[1:],
                                duration=max(1, int(round(1000 / self.fps))), loop=0)


def _render_setup(args, err: Console):
    """Backend, model, Data after reset + forward, the gait driver; errors raised."""
    from .api import compile_model, load_spec
    from .forward import forward
    from .model import make_data

    if args.nworld < 1:
        raise ValueError("--nworld must be >= 1")
    ensure_backend(args.arch, _precision(args))
    m = compile_model(load_spec(args.model or scene_path()))
    d = make_data(m, args.nworld)
    forward(m, d)
    driver = GaitDriver(gait_for(m), np.random.default_rng(args.seed).uniform(
        0.0, 2 * np.pi, args.nworld), d) if m.nu else None
    return m, d, driver


def _advance(m, d, driver, nstep: int) -> None:
    from .forward import step
    for _ in range(nstep):
        if driver is not None:
            driver.apply(d)
        step(m, d)


def cmd_render(args, out: Console, err: Console) -> int:
    from .viewer.renderer import Renderer, camera_id, check_world

    try:
        kind = output_kind(args.output)
        check_writable(args.output)
        if args.width < 1 or args.height < 1:
            raise ValueError("--width and --height must be >= 1")
        if args.steps < 0:
            raise ValueError("--steps must be >= 0")
        if kind == "video" and (args.duration <= 0 or args.fps <= 0):
            raise ValueError("--duration and --fps must be positive")
        writer = video_writer(args.output, args.fps) if kind == "video" else None
    except (ValueError, ImportError) as exc:
        err.print(f"[red]error[/red]: {escape(str(exc))}", soft_wrap=True)
        return EXIT_BAD_INPUT
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", RuntimeWarning)
            m, d, driver = _render_setup(args, err)
        camera = args.camera
        if camera is not None and camera.lstrip("-").isdigit():
            camera = int(camera)
        camera_id(m, camera)
        check_world(d, args.world)
        worlds = list(range(min(d.nworld, 16))) if args.grid else None
        r = Renderer(m, args.width, args.height)
    except (ValueError, IndexError) as exc:
        err.print(f"[red]error[/red]: {escape(str(exc))}", soft_wrap=True)
        return EXIT_BAD_INPUT
    except RuntimeError as exc:  # RenderError: no Vulkan
        err.print(f"[red]cannot render[/red]: {escape(str(exc))}", soft_wrap=True)
        return EXIT_BAD_INPUT
    from .viewer.renderer import RenderOptions
    options = RenderOptions(contact_points=args.contacts, contact_forces=args.contacts)

    def frame():
        return r.render(d, camera, args.world, options=options, worlds=worlds)

    t0 = time.perf_counter()
    _advance(m, d, driver, args.steps)
    if writer is None:
        img = frame()
        _save_image(img, args.output)
        what = f"{args.width}x{args.height} image"
    else:
        nframe = max(1, int(round(args.duration * args.fps)))
        per_frame = max(1, int(round(1.0 / (args.fps * m.opt.timestep))))
        progress = Progress(SpinnerColumn(), TextColumn("{task.description}"),
                            BarColumn(bar_width=24), MofNCompleteColumn(),
                            TimeRemainingColumn(), console=err)
        with progress:
            task = progress.add_task("rendering frames", total=nframe)
            for _ in range(nframe):
                writer.append_data(frame())
                _advance(m, d, driver, per_frame)
                progress.advance(task)
        writer.close()
        what = (f"{nframe} frames of {args.width}x{args.height} at {args.fps:g} fps "
                f"({per_frame} steps of {m.opt.timestep:g} s per frame)")
    out.print(f"wrote {escape(args.output)}: {what}, in {time.perf_counter() - t0:.1f} s",
              soft_wrap=True)
    return EXIT_OK


def _save_image(img: np.ndarray, path: str) -> None:
    from PIL import Image
    Image.fromarray(img).save(path)


def cmd_view(args, out: Console, err: Console) -> int:
    from .viewer.renderer import RenderError, has_display
    from .viewer.viewer import Viewer

    if not has_display():
        err.print("[yellow]tiphys view[/yellow]: no display here (DISPLAY and WAYLAND_DISPLAY "
                  "are unset), so no window can open. Render headless instead, e.g.\n"
                  "  tiphys render MODEL -o frame.png   (one picture)\n"
                  "  tiphys render MODEL -o clip.mp4 --duration 5 --fps 30   (a video)",
                  soft_wrap=True)
        return EXIT_BAD_INPUT
    try:
        m, d, driver = _render_setup(args, err)
        viewer = Viewer(m, d, args.width, args.height, world=args.world)
    except (ValueError, IndexError) as exc:
        err.print(f"[red]error[/red]: {escape(str(exc))}", soft_wrap=True)
        return EXIT_BAD_INPUT
    except RenderError as exc:
        err.print(f"[red]cannot open the viewer[/red]: {escape(str(exc))}", soft_wrap=True)
        return EXIT_BAD_INPUT
    from .forward import step

    def step_with_gait(m, d):
        if driver is not None:
            driver.apply(d)
        step(m, d)

    out.print(Viewer.help_text())
    try:
        viewer.run(step=step_with_gait)
    finally:
        viewer.close()
    return EXIT_OK


# --------------------------------------------------------------------------- parser


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="tiphys", description="tiphys: a MuJoCo-compatible physics engine on Taichi, "
                                   "batched over many worlds.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    def backend_options(p):
        p.add_argument("--arch", default="cpu",
                       choices=("cpu", "cuda", "vulkan", "metal", "gpu"),
                       help="Taichi backend (default: cpu)")
        p.add_argument("--precision", choices=("f64", "f32"), default=None,
                       help="float precision (default: f64 on cpu, f32 elsewhere)")

    p = sub.add_parser("info", help="sizes, element counts, options and compile time of a model")
    p.add_argument("model", nargs="?", help="MJCF file (default: the bundled scene)")
    p.add_argument("--device", action="store_true",
                   help="also upload the model to the device and time it")
    p.add_argument("--traceback", action="store_true",
                   help="show the traceback of an internal compiler error")
    backend_options(p)
    p.set_defaults(func=cmd_info)

    p = sub.add_parser("run", help="step many worlds with contacts under an open-loop gait")
    p.add_argument("model", nargs="?", help="MJCF file (default: the bundled scene)")
    p.add_argument("--nworld", type=int, default=RUN_NWORLD,
                   help=f"number of worlds (default {RUN_NWORLD})")
    p.add_argument("--steps", type=int, default=RUN_STEPS,
                   help=f"steps of every world (default {RUN_STEPS})")
    p.add_argument("--seed", type=int, default=0, help="random seed of the per-world phases")
    backend_options(p)
    p.set_defaults(func=cmd_run)

    p = sub.add_parser(
        "bench", help="time tiphys against MuJoCo C (benchmarks/run.py, source checkout)",
        description="Time tiphys against MuJoCo C on many worlds (benchmarks/run.py of a "
                    "source checkout). Results go to --out, by default "
                    f"{bench_out_default()}; never into the checkout.")
    p.add_argument("benches", nargs="*", metavar="BENCH", default=[],
                   help=f"benchmarks: {', '.join(BENCHES)} (default: all)")
    p.add_argument("--nworld", type=int, nargs="+", metavar="N",
                   help="world counts (default 1 64 1024 4096; --quick: 1 64)")
    p.add_argument("--steps", type=int, default=10,
                   help="step calls per timed call of the step benchmark (default 10)")
    p.add_argument("--precision", nargs="+", choices=("f64", "f32"), default=None,
                   help="precisions (default: f64 f32)")
    p.add_argument("--scene", nargs="+", metavar="NAME",
                   help="scenes whose name contains NAME (default: all)")
    p.add_argument("--quick", action="store_true", help="nworld 1 and 64 only")
    p.add_argument("--out", metavar="PATH", default=None,
                   help=f"folder for results.json and RESULTS.md (default "
                        f"{bench_out_default()})")
    p.set_defaults(func=cmd_bench)

    def scene_options(p, width, height):
        p.add_argument("model", nargs="?", help="MJCF file (default: the bundled scene)")
        p.add_argument("--nworld", type=int, default=1, help="number of worlds (default 1)")
        p.add_argument("--world", type=int, default=0, help="the world to show (default 0)")
        p.add_argument("--width", type=int, default=width, help=f"pixels (default {width})")
        p.add_argument("--height", type=int, default=height,
                       help=f"pixels (default {height})")
        p.add_argument("--seed", type=int, default=0, help="random seed of the gait phases")
        backend_options(p)

    p = sub.add_parser("view", help="interactive viewer (GGUI window; H shows the keys)")
    scene_options(p, 1280, 800)
    p.set_defaults(func=cmd_view)

    p = sub.add_parser("render", help="render a picture or a video headless (GGUI, Vulkan)")
    scene_options(p, 640, 480)
    p.add_argument("-o", "--output", required=True,
                   help="output file: .png/.jpg/... (a picture) or .mp4/.gif (a video)")
    p.add_argument("--camera", default=None,
                   help="model camera name or id (default: the free camera)")
    p.add_argument("--steps", type=int, default=0,
                   help="steps to simulate before the (first) frame (default 0)")
    p.add_argument("--duration", type=float, default=5.0,
                   help="video length in simulated seconds (default 5)")
    p.add_argument("--fps", type=float, default=30.0, help="video frames per second (30)")
    p.add_argument("--grid", action="store_true",
                   help="tile the worlds (up to 16) side by side")
    p.add_argument("--contacts", action="store_true", help="draw contact points and forces")
    p.set_defaults(func=cmd_render)
    return parser


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Run the CLI with ``argv`` (default: ``sys.argv[1:]``); returns the exit code."""
    parser = build_parser()
    args = parser.parse_args(argv)
    out, err = Console(highlight=False), Console(stderr=True, highlight=False)
    if args.command is None:
        parser.print_help()
        return EXIT_BAD_INPUT
    try:
        return args.func(args, out, err)
    except ModelError as exc:
        err.print(f"[red]error[/red]: {escape(str(exc))}", soft_wrap=True)
        return EXIT_BAD_INPUT
    except NotImplementedError as exc:
        err.print(f"[yellow]not supported yet[/yellow]: {escape(str(exc))}\n"
                  f"(`tiphys info` shows what the model contains)", soft_wrap=True)
        return EXIT_BAD_INPUT
    except (FileNotFoundError, backend.InitError) as exc:
        err.print(f"[red]error[/red]: {escape(str(exc))}", soft_wrap=True)
        return EXIT_BAD_INPUT
    except KeyboardInterrupt:
        err.print("interrupted")
        return 130


if __name__ == "__main__":
    sys.exit(main())
