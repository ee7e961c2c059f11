#!/usr/bin/env bash
# Installs the Debian 12 packages yolocache builds against. Idempotent; run as root.
#   scripts/install-deps.sh          # everything (library, tools, trainer, tests)
set -euo pipefail
packages=(
  build-essential cmake ninja-build pkg-config git
  libopencv-core-dev libopencv-imgproc-dev libopencv-imgcodecs-dev
  # yolocache-train predict on video files (optional at configure time).
  libopencv-videoio-dev
  # yolocache-train's plots (results.png, PR/F1 curves, confusion matrices, labels.jpg); the cairo driver
  # renders them antialiased (without it PLplot's plain memory driver is used).
  libplplot-dev plplot-driver-cairo
  libturbojpeg0-dev liblmdb-dev libzstd-dev libxxhash-dev
  libtbb-dev libcli11-dev nlohmann-json3-dev libyaml-cpp-dev
  libgtest-dev libgmock-dev
  libtorch-dev libgloo-dev
  clang libclang-rt-14-dev
  # Test fixtures only: genuine Ultralytics checkpoints and reference outputs are made at test time by
  # ../shared/ultralytics under Debian's python3 (tests/trainer/fixtures/*.py); nothing at run time.
  python3-torch python3-torchvision python3-opencv python3-yaml python3-scipy python3-matplotlib
  python3-pandas python3-psutil python3-tqdm python3-requests python3-cpuinfo python3-pil
  # The Python package (python/): built against Debian's python3-torch, tested with pytest.
  pybind11-dev python3-dev python3-numpy python3-pytest
)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi
SUDO=""
[ "$(id -u)" -eq 0 ] || SUDO="sudo"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -qq
$SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "install-deps: installed ${missing[*]}"
