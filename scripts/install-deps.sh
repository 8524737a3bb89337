#!/usr/bin/env bash
# Installs what the build and the tests need on a fresh Debian/Ubuntu machine.
# Idempotent: packages already present are left alone.
set -euo pipefail

need=(cmake make gcc clang libclang-rt-14-dev libibverbs-dev python3 mpich libmpich-dev)
missing=()
for pkg in "${need[@]}"; do
	dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" ||
		missing+=("$pkg")
done
if ((${#missing[@]})); then
	echo "install-deps: installing ${missing[*]}"
	sudo_cmd=()
	[ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
	export DEBIAN_FRONTEND=noninteractive
	"${sudo_cmd[@]}" apt-get update -qq
	"${sudo_cmd[@]}" apt-get install -y -qq "${missing[@]}" >/dev/null
fi
test -f /usr/include/infiniband/mlx5dv.h || {
	echo "install-deps: infiniband/mlx5dv.h still missing after installing libibverbs-dev" >&2
	exit 1
}

# NVSHMEM (optional): the NVSHMEM path of `gic lat` and `gic rate` (issue 7)
# builds against NVIDIA's pip wheel, unpacked into .deps/pip (ignored by
# git); bench/gic/CMakeLists.txt finds it there. The wheel's one dependency
# (nvidia-cuda-cccl) duplicates the CUDA toolkit's own headers: --no-deps.
root="$(cd "$(dirname "$0")/.." && pwd)"
nvshmem_pip="$root/.deps/pip"
if [ -f "$nvshmem_pip/nvidia/nvshmem/include/nvshmem.h" ]; then
	:
elif PIP_ROOT_USER_ACTION=ignore python3 -m pip install --quiet --disable-pip-version-check \
	--no-deps --target "$nvshmem_pip" nvidia-nvshmem-cu13; then
	echo "install-deps: NVSHMEM installed in .deps/pip"
else
	echo "install-deps: WARNING: could not install the nvidia-nvshmem-cu13 wheel" \
		"(python3 -m pip failed); the NVSHMEM path of gic will not be built" >&2
fi
echo "install-deps: ok"
