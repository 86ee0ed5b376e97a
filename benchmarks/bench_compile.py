"""Benchmark: model compile time, tiphys vs MuJoCo, on the largest corpus models.

    python benchmarks/bench_compile.py                  # menagerie robots + 6 slowest others
    python benchmarks/bench_compile.py --top 3 --repeat 1
    python benchmarks/bench_compile.py --models menagerie/robotis_op3/scene.xml
    python benchmarks/bench_compile.py --all --repeat 7    # every corpus model

Models: the default scene of every Menagerie robot in the corpus
(``<corpus>/menagerie/index.json``, written by ``tools/fetch_corpus.py``; the robots
are fetched on demand when missing, and skipped with a note where they cannot be
downloaded), plus the ``--top`` other corpus models that MuJoCo takes longest to
compile (one MuJoCo compile of every corpus model ranks them; models tiphys does not
support yet are listed as errors and the next one is taken). ``--models`` names
files (relative to the corpus, or absolute) instead. ``--all`` times every corpus
model MuJoCo compiles (the small ones too, Menagerie's when present) and lists, after
the table, those over the aim.

Times, per model, in this one process, on the same file: tiphys = ``load_spec`` +
``compile_spec`` (MJCF file to the host ModelArrays: parsing, assets, meshes, every
compiler pass; no device upload and no Taichi kernels), MuJoCo =
``mujoco.MjModel.from_xml_path``. Each is the median of ``--repeat`` runs (3),
taken alternately, each with both engines' mesh caches empty (cold: what a new
process pays); "cached ratio" is one more load of the same file with both caches
warm. ratio = tiphys / MuJoCo; the aim is at most 3.

The table goes to stdout; the JSON (machine, date, per-model times) to ``--out``
(default ~/.cache/tiphys/bench/compile.json, or under $XDG_CACHE_HOME): never into
the checkout.
"""
from __future__ import annotations

import argparse
import datetime
import json
import os
import platform
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
AIM = 3.0  # tiphys may take at most this many times MuJoCo's compile time


def default_out() -> str:
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "tiphys", "bench", "compile.json")


def corpus_dir() -> str:
    sys.path.insert(0, os.path.join(REPO, "tests"))
    from oracle import corpus_dir as corpus
    return corpus()


def menagerie_scenes(corpus: str, fetch: bool) -> list[str]:
    """The default scene of each Menagerie robot in the corpus (fetched if asked)."""
    if fetch:
        sys.path.insert(0, os.path.join(REPO, "tools"))
        from fetch_corpus import fetch_menagerie
        fetch_menagerie(corpus)
    path = os.path.join(corpus, "menagerie", "index.json")
    if not os.path.isfile(path):
        return []
    with open(path) as f:
        index = json.load(f)
    return [os.path.join("menagerie", name, entry["scene"])
            for name, entry in sorted(index.items())]


def slowest_for_mujoco(corpus: str) -> list[str]:
    """The non-Menagerie corpus models MuJoCo compiles, slowest first."""
    import mujoco
    from oracle import corpus_models
    timed = []
    for rel in corpus_models(include_extra=True):
        if rel.split(os.sep)[0] == "menagerie":
            continue
        t0 = time.perf_counter()
        try:
            mujoco.MjModel.from_xml_path(os.path.join(corpus, rel))
        except Exception:  # noqa: BLE001 - models MuJoCo rejects are not benchmarks
            continue
        timed.append((time.perf_counter() - t0, rel))
    return [rel for _, rel in sorted(timed, reverse=True)]


def all_models(corpus: str) -> list[str]:
    """Every corpus model MuJoCo compiles (included fragments left out), sorted."""
    import mujoco
    from oracle import corpus_models
    out = []
    for rel in corpus_models(include_extra=True):
        try:
            mujoco.MjModel.from_xml_path(os.path.join(corpus, rel))
        except Exception:  # noqa: BLE001 - fragments and models MuJoCo rejects
            continue
        out.append(rel)
    return out


def time_model(path: str, repeat: int) -> dict:
    """Median compile times of one file (both engines, alternately), cold: both
    engines keep compiled meshes for the rest of the process (MuJoCo's asset cache,
    tiphys's mesh cache), so each cold run starts with both caches empty; then the
    time of a load with both caches warm (the same file loaded again)."""
    import mujoco
    from tiphys.api import load_spec
    from tiphys.compiler.compile import compile_spec
    from tiphys.compiler.mesh import clear_mesh_cache
    cache = mujoco.mj_getCache()
    capacity = mujoco.mj_getCacheCapacity(cache)
    ours, theirs = [], []
    for _ in range(repeat):
        mujoco.mj_setCacheCapacity(cache, 0)  # empties it
        mujoco.mj_setCacheCapacity(cache, capacity)
        t0 = time.perf_counter()
        mjm = mujoco.MjModel.from_xml_path(path)
        theirs.append(time.perf_counter() - t0)
        clear_mesh_cache()
        t0 = time.perf_counter()
        compile_spec(load_spec(path))
        ours.append(time.perf_counter() - t0)
    t0 = time.perf_counter()
    mujoco.MjModel.from_xml_path(path)
    theirs_cached = time.perf_counter() - t0
    t0 = time.perf_counter()
    compile_spec(load_spec(path))
    ours_cached = time.perf_counter() - t0
    t, m = statistics.median(ours), statistics.median(theirs)
    return {"tiphys_s": t, "mujoco_s": m, "ratio": t / m, "runs_tiphys_s": ours,
            "runs_mujoco_s": theirs, "tiphys_cached_s": ours_cached,
            "mujoco_cached_s": theirs_cached, "cached_ratio": ours_cached / theirs_cached,
            "nmesh": mjm.nmesh, "nmeshvert": mjm.nmeshvert,
            "nmeshface": mjm.nmeshface, "nbody": mjm.nbody}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--models", nargs="*", help="MJCF files (relative to the corpus or absolute)")
    ap.add_argument("--all", action="store_true",
                    help="every corpus model, small ones too; lists those over the aim")
    ap.add_argument("--top", type=int, default=6, help="slowest non-Menagerie corpus models")
    ap.add_argument("--repeat", type=int, default=3, help="runs per model (median)")
    ap.add_argument("--no-fetch", action="store_true",
                    help="use the Menagerie robots already in the corpus, download none")
    ap.add_argument("--out", default=default_out(), metavar="PATH", help="JSON results file")
    args = ap.parse_args()
    out = os.path.abspath(args.out)
    if out == REPO or out.startswith(REPO + os.sep):
        raise SystemExit(f"--out {args.out}: results never go into the checkout")

    from rich.console import Console
    from rich.table import Table
    console = Console()
    corpus = corpus_dir()
    ranked = []  # (the --top others: the slowest for MuJoCo that tiphys compiles)
    if args.models:
        models = list(args.models)
    elif args.all:
        models = all_models(corpus)
    else:
        models = menagerie_scenes(corpus, fetch=not args.no_fetch)
        if not models:
            console.print("[yellow]no Menagerie robots in the corpus[/yellow] (see "
                          "tools/fetch_corpus.py): timing the other corpus models only")
        ranked = slowest_for_mujoco(corpus)

    import mujoco
    table = Table(title=f"compile time, cold (mesh caches empty), median of {args.repeat} "
                        f"(tiphys load_spec + compile_spec vs MjModel.from_xml_path); "
                        f"cached: the same file again")
    for col in ("model", "tiphys ms", "MuJoCo ms", "ratio", "cached ratio", "meshes",
                "mesh faces"):
        table.add_column(col, justify="left" if col == "model" else "right",
                         overflow="fold")
    results = []
    others = 0
    for rel in models + ranked:
        if rel in ranked and others >= args.top:
            break
        path = rel if os.path.isabs(rel) else os.path.join(corpus, rel)
        console.print(f"{rel} ...", style="dim", highlight=False)
        try:
            res = time_model(path, args.repeat)
        except Exception as exc:  # noqa: BLE001 - reported in the table and the JSON
            results.append({"model": rel, "error": f"{type(exc).__name__}: {exc}"})
            table.add_row(rel, "error", "", "", "", "", "")
            console.print(f"{rel}: {type(exc).__name__}: {exc}", style="red",
                          highlight=False, markup=False)
            continue
        results.append({"model": rel, **res})
        others += rel in ranked
        style = "" if res["ratio"] <= AIM else "red"
        table.add_row(rel, f"{res['tiphys_s'] * 1e3:.2f}", f"{res['mujoco_s'] * 1e3:.2f}",
                      f"{res['ratio']:.1f}", f"{res['cached_ratio']:.1f}", str(res["nmesh"]),
                      str(res["nmeshface"]),
                      style=style)
    console.print(table)
    over = [r for r in results if r.get("ratio", 0.0) > AIM]
    console.print(f"{len(over)} of {len(results)} models over {AIM:g}x"
                  + "".join(f"\n  {r['model']}: {r['tiphys_s'] * 1e3:.2f} ms vs "
                            f"{r['mujoco_s'] * 1e3:.2f} ms ({r['ratio']:.1f}x)"
                            for r in sorted(over, key=lambda r: -r["ratio"])),
                  highlight=False)

    doc = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "machine": {"platform": platform.platform(), "processor": platform.processor(),
                       "cpu_count": os.cpu_count(), "python": platform.python_version(),
                       "mujoco": mujoco.__version__,
                       "loadavg": list(os.getloadavg()) if hasattr(os, "getloadavg") else None},
           "repeat": args.repeat, "aim_ratio": AIM, "models": results}
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w") as f:
        json.dump(doc, f, indent=1)
    console.print(f"wrote {out}")


if __name__ == "__main__":
    main()
