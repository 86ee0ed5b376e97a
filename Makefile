# `make run` and `make test` build .venv when missing, then act.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.tiphys-installed
CORPUS := .cache/corpus
export TI_OFFLINE_CACHE_FILE_PATH ?= $(CURDIR)/.cache/taichi
export TIPHYS_CORPUS ?= $(CURDIR)/$(CORPUS)

.PHONY: venv corpus vulkan test run bench picture info clean

venv: $(STAMP)

# setup.py builds the C twins of parts of tiphys/compiler (polygons.py, mesh_io.py,
# texture.py, mesh.py, bvh.py) and the native step replay (replay.py) in place (optional)
$(STAMP): pyproject.toml setup.py tiphys/compiler/_polytree.c tiphys/compiler/_objscan.c \
          tiphys/compiler/_mt64.c tiphys/compiler/_meshsum.c tiphys/compiler/_bvhtree.c \
          tiphys/_native_replay.c
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	touch $(STAMP)

corpus: $(CORPUS)/.done

$(CORPUS)/.done: tools/fetch_corpus.py | $(STAMP)
	$(PY) tools/fetch_corpus.py $(CORPUS)
	touch $@

# Mesa's software Vulkan lets the SPIR-V kernels run on a machine without a GPU.
vulkan:
	@ldconfig -p 2>/dev/null | grep -q libvulkan.so.1 && ls /usr/share/vulkan/icd.d/lvp_icd*.json >/dev/null 2>&1 \
	  || { [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null \
	       && (apt-get update -qq && apt-get install -y -qq mesa-vulkan-drivers libvulkan1) >/dev/null 2>&1 \
	       || echo "note: could not install mesa-vulkan-drivers; Vulkan tests will be skipped"; }

# one pytest worker per core (at most TEST_WORKERS): Taichi compiles are single-threaded,
# so a 2-core machine runs the suite in about half the time; each module stays on one
# worker (--dist loadfile) and keeps its shared Model/Data fixtures
TEST_WORKERS ?= 4
test: $(STAMP) corpus vulkan
	$(PY) -m pytest -q -n auto --maxprocesses=$(TEST_WORKERS) --dist loadfile --no-loadscope-reorder --durations=25 tests

run: $(STAMP)
	$(PY) -m tiphys.cli run

bench: $(STAMP)
	$(PY) benchmarks/run.py
	$(PY) benchmarks/bench_step.py
	$(PY) benchmarks/bench_collision.py
	$(PY) benchmarks/bench_contact.py
	$(PY) benchmarks/bench_launch.py
	$(PY) benchmarks/bench_fd.py
	$(PY) benchmarks/stability.py
	$(PY) benchmarks/bench_render.py
	$(PY) benchmarks/bench_compile.py
	$(PY) benchmarks/bench_plugin.py
	$(PY) benchmarks/bench_flex.py
	$(PY) benchmarks/bench_sleep.py

# the README's picture: the bundled scene after 1 s of trotting, rendered headless
picture: $(STAMP) vulkan
	$(PY) -m tiphys.cli render --steps 250 --contacts --width 800 --height 450 -o docs/scene.png

clean:
	rm -rf $(VENV) .cache build dist *.egg-info
