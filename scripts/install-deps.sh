#!/usr/bin/env bash
# Installs the Debian 12 packages yolocache builds against. Idempotent; run as root.
#   scripts/install-deps.sh          # everything (library, tools, trainer, tests)
# Besides the apt packages: onnxruntime-node from the npm registry into .deps/onnxruntime (git-ignored),
# the ONNX runtime export_test.cc runs exported models with.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
packages=(
  build-essential cmake ninja-build pkg-config git
  libopencv-core-dev libopencv-imgproc-dev libopencv-imgcodecs-dev
  # yolocache-train predict on video files (optional at configure time).
  libopencv-videoio-dev
  # yolocache-train's plots (results.png, PR/F1 curves, confusion matrices, labels.jpg); the cairo driver
  # renders them antialiased (without it PLplot's plain memory driver is used).
  libplplot-dev plplot-driver-cairo
  libturbojpeg0-dev liblmdb-dev libzstd-dev libxxhash-dev zlib1g-dev
  libtbb-dev libcli11-dev nlohmann-json3-dev libyaml-cpp-dev
  # s3:// and https:// caches (libcache/remote/): HTTP and AWS Signature V4.
  libcurl4-openssl-dev
  libgtest-dev libgmock-dev
  libtorch-dev libgloo-dev
  # ONNX export: the protobuf types and checker (optional at configure time; without them no ONNX).
  libonnx-dev libprotobuf-dev
  clang libclang-rt-14-dev
  # Test fixtures only: genuine Ultralytics checkpoints and reference outputs are made at test time by
  # ../shared/ultralytics under Debian's python3 (tests/trainer/fixtures/*.py); nothing at run time.
  python3-torch python3-torchvision python3-opencv python3-yaml python3-scipy python3-matplotlib
  python3-pandas python3-psutil python3-tqdm python3-requests python3-cpuinfo python3-pil
  # The Python package (python/): built against Debian's python3-torch, tested with pytest.
  pybind11-dev python3-dev python3-numpy python3-pytest
  # Test only: the S3-compatible store the remote tests start on loopback (tests/servers/swift_s3.sh).
  swift-proxy swift-object swift-container swift-account memcached
  # Test only: the plain web server of the http(s):// cache tests (tests/servers/nginx_http.sh).
  nginx-light
  # Test only: node runs onnxruntime-node on exported ONNX files (tests/trainer/fixtures/onnx_run.js).
  nodejs npm
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# A nodejs from another source (NodeSource) ships npm inside it and conflicts with Debian's npm package.
if command -v npm >/dev/null 2>&1; then
  kept=()
  for p in "${missing[@]}"; do [ "$p" = npm ] || [ "$p" = nodejs ] || kept+=("$p"); done
  missing=("${kept[@]}")
fi
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
else
  SUDO=""
  [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
  echo "install-deps: installed ${missing[*]}"
fi

# onnxruntime-node (CPU runtime for linux-x64 inside the package). --ignore-scripts: its install step
# would download a GPU add-on, which fails offline; the CPU binding needs nothing from it.
ort_version=1.30.0
ort_dir="$root/.deps/onnxruntime"
if ! grep -qs "\"version\": \"$ort_version\"" "$ort_dir/node_modules/onnxruntime-node/package.json"; then
  mkdir -p "$ort_dir"
  (cd "$ort_dir" && npm install --ignore-scripts --no-audit --no-fund --loglevel=error "onnxruntime-node@$ort_version")
fi
NODE_PATH="$ort_dir/node_modules" node -e "require('onnxruntime-node')" \
  && echo "install-deps: onnxruntime-node $ort_version loads ($ort_dir)"
