#!/bin/bash
# Runs on a lent GPU machine (see tools/device/README.md): unpacks .whl/, then
#   profile  - benchmarks/profile_gpu.py: rates against rollout, then the kernel profiler
#   bench    - bench_contact.py (f32 worker, CUDA) and bench_large.py humanoid3 on CUDA
#   tests    - the CUDA checks of the suite (-k cuda)
# chosen by the first argument (default: all three). Output under $OUT.
set -u
what=${1:-profile bench tests}
mkdir -p /tmp/site
[ -f /tmp/site/.done ] || { for w in .whl/*.whl .whl/*.zip; do python3 -m zipfile -e "$w" /tmp/site; done; touch /tmp/site/.done; }
ln -sfn ../kernels tiphys/kernels
export PYTHONPATH=$PWD:/tmp/site TIPHYS_CORPUS=$PWD/.cache/corpus PYTHONUNBUFFERED=1
export TI_OFFLINE_CACHE_FILE_PATH=/tmp/ticache
nvidia-smi -L; nproc; date -u +%FT%TZ
scenes=${SCENES:-humanoid:8192 ant:8192 humanoid3:4096}
if [[ $what == *profile* ]]; then
  timeout ${RATE_S:-230} python3 benchmarks/profile_gpu.py --scene $scenes > $OUT/rates.txt 2>&1
  echo "rates rc $?"; grep ratio $OUT/rates.txt
  timeout ${PROF_S:-230} python3 benchmarks/profile_gpu.py --profile --scene $scenes > $OUT/profile.txt 2>&1
  echo "profile rc $?"; grep -v "^\[" $OUT/profile.txt | grep -A12 "^## "
fi
if [[ $what == *bench* ]]; then
  timeout ${CONTACT_S:-200} python3 benchmarks/bench_contact.py --worker f32 --arch cuda \
    --nworld 1 64 1024 8192 > $OUT/contact.json 2> $OUT/contact.err
  echo "contact rc $?"
  timeout ${LARGE_S:-150} python3 benchmarks/bench_large.py --arch cuda --precision f32 \
    --scenes humanoid3 --nworld 1 64 4096 > $OUT/large.txt 2>&1
  echo "large rc $?"; grep "^| [0-9]" $OUT/large.txt
fi
if [[ $what == *tests* ]]; then
  timeout ${TEST_S:-200} python3 -m pytest -q -p no:cacheprovider -n 8 --dist loadfile -rf -k cuda \
    tests/test_precision.py tests/test_constraint.py tests/test_energy.py tests/test_sensor_acc.py \
    tests/test_solver_vulkan.py tests/test_collide_primitive.py tests/test_sparse_newton.py \
    > $OUT/cuda_tests.log 2>&1
  echo "tests rc $?"; grep -E "passed|failed|^FAILED" $OUT/cuda_tests.log | tail -8
fi
date -u +%FT%TZ
