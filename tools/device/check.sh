#!/bin/bash
# Runs on a lent GPU machine (see tools/device/README.md): unpacks .whl/, then
#   profile  - benchmarks/profile_gpu.py: rates against rollout, then the kernel profiler
#   bench    - bench_contact.py (f32 worker, CUDA) and bench_large.py humanoid3 on CUDA
#   tests    - the CUDA checks of the suite (-k cuda)
#   sensor   - test_sensor_acc's f32 worker on CUDA as tiphys runs it (no fast math), then
#              with Taichi's fast math
#   flex     - bench_flex.py on CUDA in f32
#   fastmath - profile_gpu.py's rates with tiphys's exact math and with Taichi's fast math
# chosen by the first argument (default: profile bench tests). Output under $OUT.
set -u
what=${1:-profile bench tests}
mkdir -p /tmp/site
[ -f /tmp/site/.done ] || { for w in .whl/*.whl .whl/*.zip; do python3 -m zipfile -e "$w" /tmp/site; done; touch /tmp/site/.done; }
ln -sfn ../kernels tiphys/kernels
export PYTHONPATH=$PWD:/tmp/site TIPHYS_CORPUS=$PWD/.cache/corpus PYTHONUNBUFFERED=1
export TI_OFFLINE_CACHE_FILE_PATH=/tmp/ticache
nvidia-smi -L; nproc; date -u +%FT%TZ
scenes=${SCENES:-humanoid:8192 ant:8192 humanoid3:4096}
if [[ $what == *sensor* ]]; then
  timeout ${SENSOR_S:-150} python3 tests/test_sensor_acc.py f32 cuda > $OUT/sensor.txt 2>&1
  echo "sensor rc $?"; grep -v "^\[" $OUT/sensor.txt | tail -4
  timeout ${SENSOR_S:-150} python3 - > $OUT/sensor_fast.txt 2>&1 <<'PY'
import runpy, sys
import tiphys
import tiphys.backend as backend
plain = backend.init
def init(*args, **kwargs):
    kwargs.setdefault("fast_math", True)
    return plain(*args, **kwargs)
backend.init = tiphys.init = init
sys.argv = ["tests/test_sensor_acc.py", "f32", "cuda"]
sys.path.insert(0, "tests")
runpy.run_path("tests/test_sensor_acc.py", run_name="__main__")
PY
  echo "sensor (fast_math=True) rc $?"; grep -v "^\[" $OUT/sensor_fast.txt | tail -4
fi
if [[ $what == *profile* ]]; then
  timeout ${RATE_S:-230} python3 benchmarks/profile_gpu.py --scene $scenes > $OUT/rates.txt 2>&1
  echo "rates rc $?"; grep ratio $OUT/rates.txt
  timeout ${PROF_S:-230} python3 benchmarks/profile_gpu.py --profile --scene $scenes > $OUT/profile.txt 2>&1
  echo "profile rc $?"; grep -v "^\[" $OUT/profile.txt | grep -A12 "^## "
fi
if [[ $what == *bench* ]]; then
  timeout ${CONTACT_S:-200} python3 benchmarks/bench_contact.py --worker f32 --arch cuda \
    --nworld ${CONTACT_NWORLD:-1 64 1024 8192} > $OUT/contact.json 2> $OUT/contact.err
  echo "contact rc $?"
  timeout ${LARGE_S:-150} python3 benchmarks/bench_large.py --arch cuda --precision f32 \
    --scenes humanoid3 --nworld 1 64 4096 > $OUT/large.txt 2>&1
  echo "large rc $?"; grep "^| [0-9]" $OUT/large.txt
fi
if [[ $what == *tests* ]]; then
  # one pytest process per file, all at once: with a cold Taichi cache this finished
  # every CUDA check in 117 s where `-n 8 --dist loadfile` finished two in 210 s
  mkdir -p /tmp/cuda_tests
  for f in precision constraint energy sensor_acc solver_vulkan collide_primitive sparse_newton \
      sparse_jacobian plugin plugin_touch plugin_cable flex_engine flex_collision; do
    timeout ${TEST_S:-200} python3 -m pytest -v -p no:xdist -p no:cacheprovider -rf -k cuda \
      tests/test_$f.py > /tmp/cuda_tests/$f.log 2>&1 &
  done
  wait
  cat /tmp/cuda_tests/*.log > $OUT/cuda_tests.log
  echo "tests:"; grep -h -E "(PASSED|FAILED|ERROR)( |$)|^FAILED" /tmp/cuda_tests/*.log
fi
if [[ $what == *fastmath* ]]; then
  for flag in "" --fast-math; do
    timeout ${FASTMATH_S:-150} python3 benchmarks/profile_gpu.py --scene $scenes $flag \
      >> $OUT/fastmath.txt 2>&1
    echo "rates ${flag:-exact math} rc $?"
  done
  grep ratio $OUT/fastmath.txt
fi
if [[ $what == *flex* ]]; then
  timeout ${FLEX_S:-200} python3 benchmarks/bench_flex.py --arch cuda --precision f32 \
    --steps ${FLEX_STEPS:-10} --nworld ${FLEX_NWORLD:-1 64 1024} > $OUT/flex.txt 2>&1
  echo "flex rc $?"; grep -E "nworld|^\| (cloth|cube|rope)" $OUT/flex.txt | tail -12
fi
date -u +%FT%TZ
