# Sourced by the GPU-host bench scripts: the sysroot's libraries, as bench/gpu_host_build.sh built against
# them (../shared/gpu/README.md). Extracts .gpu/sysroot.tar.gz once; does nothing where .gpu is absent or
# on a machine without a GPU (the same scripts run there against the local build: DEVICE=cpu).
#   . "$repo/bench/gpu_env.sh" "$repo"
if [ -f "$1/.gpu/activate.sh" ] && command -v nvidia-smi >/dev/null; then
  [ -d "$1/.gpu/sysroot" ] || tar -C "$1/.gpu" -xzf "$1/.gpu/sysroot.tar.gz"
  . "$1/.gpu/activate.sh" "$1/.gpu/sysroot"
fi
