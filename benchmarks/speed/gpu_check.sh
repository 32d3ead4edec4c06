#!/usr/bin/env bash
# The checks that need a GPU, in one short run (a borrowed CUDA machine with torch, PyG and JAX installed; the
# missing wheels, lightgbm and protobuf, carried in .whl/). Writes into OUT (default ./gpu_out):
#   cuda_tests.txt        the CUDA tests (tests/models/test_cuda_models.py, tests/train/test_trainer_cuda.py,
#                         tests/layerdag/test_device.py), which skip on a CPU-only machine;
#   tile_<model>.json     the tile models trained unchanged on the shipped kernel dataset cpu_zoo_kernels_flags
#                         (one TILE-schema graph per distinct kernel; configurations = the flag vectors it ran
#                         under), official split, one seed each, side by side on the GPU
#                         (benchmarks/models/bench_real.py --protocols flags); EPOCHS (default 6) caps their training.
#     bash benchmarks/speed/gpu_check.sh
set -uo pipefail
cd "$(dirname "$0")/../.."
OUT=${OUT:-gpu_out}
mkdir -p "$OUT"
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl || exit 1
  export PYTHONPATH=/tmp/site:$PWD/src
else
  export PYTHONPATH=$PWD/src
fi
export PYTHONUNBUFFERED=1 GRAPHCOST_CACHE=/tmp/gccache
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv | tee "$OUT/gpu.txt"
python3 -c "import torch, torch_geometric, lightgbm, jax; print('torch', torch.__version__, 'pyg', torch_geometric.__version__, \
'lightgbm', lightgbm.__version__, 'jax', jax.__version__, 'cuda', torch.cuda.is_available())" | tee -a "$OUT/gpu.txt"
nproc | tee -a "$OUT/gpu.txt"
DATA=$(python3 -c "from graphcost.data.io.packed import shipped_data_dir; print(shipped_data_dir('cpu_zoo_kernels_flags'))")
EPOCHS=${EPOCHS:-6}
pids=()
MODELS=${MODELS:-default tgraph-paper sage kaufman}
for model in $MODELS; do
  timeout "${TILE_TIMEOUT:-330}" python3 benchmarks/models/bench_real.py --protocols flags --flags-data "$DATA" --models "$model" \
    --seeds 1 --epochs "$EPOCHS" --threads 3 --device cuda --no-markdown --parts "/tmp/parts_$model" \
    --out "$OUT/tile_$model.json" > "$OUT/tile_$model.log" 2>&1 &
  pids+=($!)
done
[ -n "${SKIP_TESTS:-}" ] || timeout 200 python3 -m pytest -q -p no:cacheprovider tests/models/test_cuda_models.py tests/train/test_trainer_cuda.py \
  tests/layerdag/test_device.py > "$OUT/cuda_tests.txt" 2>&1
[ -n "${SKIP_TESTS:-}" ] || tail -5 "$OUT/cuda_tests.txt"
for pid in "${pids[@]}"; do wait "$pid"; echo "tile model process $pid: exit $?"; done
for model in $MODELS; do echo "== $model"; tail -4 "$OUT/tile_$model.log"; done
