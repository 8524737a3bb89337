#!/usr/bin/env bash
# Installs what the build and the tests need on a fresh Debian/Ubuntu machine.
# Idempotent: packages already present are left alone.
set -euo pipefail

need=(cmake make gcc clang libclang-rt-14-dev libibverbs-dev python3 mpich libmpich-dev
      ibverbs-utils python3-pyverbs perftest) # the last three: programs the emulated device runs
missing=()
for pkg in "${need[@]}"; do
	dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" ||
		missing+=("$pkg")
done
sudo_cmd=()
[ "$(id -u)" -eq 0 ] || sudo_cmd=(sudo)
export DEBIAN_FRONTEND=noninteractive
if ((${#missing[@]})); then
	echo "install-deps: installing ${missing[*]}"
	"${sudo_cmd[@]}" apt-get update -qq
	"${sudo_cmd[@]}" apt-get install -y -qq "${missing[@]}" >/dev/null
fi
test -f /usr/include/infiniband/mlx5dv.h || {
	echo "install-deps: infiniband/mlx5dv.h still missing after installing libibverbs-dev" >&2
	exit 1
}

# matplotlib: scripts/report-plots.py draws the paper's figures with it, and
# its ctest (scripts.report_plots) fails without it. Debian's package serves
# Debian's own python3; another python3 first on PATH (pyenv, a venv) does
# not see it and gets PyPI's wheel instead.
if ! python3 -c 'import matplotlib' >/dev/null 2>&1; then
	if [ "$(python3 -c 'import sys; print(sys.prefix)')" = /usr ]; then
		echo "install-deps: installing python3-matplotlib"
		"${sudo_cmd[@]}" apt-get update -qq
		"${sudo_cmd[@]}" apt-get install -y -qq python3-matplotlib >/dev/null || true
	else
		echo "install-deps: installing matplotlib for $(command -v python3) (pip)"
		PIP_ROOT_USER_ACTION=ignore python3 -m pip install --quiet --disable-pip-version-check \
			matplotlib || true
	fi
	python3 -c 'import matplotlib' >/dev/null 2>&1 ||
		echo "install-deps: WARNING: matplotlib is still not importable by $(command -v python3);" \
			"scripts/report-plots.py draws no figures and its ctest fails" >&2
fi

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

# NCCL device API headers (optional): the NCCL GIN path of `gic lat` and
# `gic rate` (issue 7) compiles against them; libnccl.so.2 is opened at run
# time, so only include/ is kept, in .deps/nccl (ignored by git). Pinned to
# the version of the device machine's library (the device structures must
# match). The wheel is ~200 MB: its headers are unpacked once into a cache
# outside the tree (GIC_DEPS_CACHE, default ~/.cache/gic-deps), and a fresh
# clone copies them from there.
nccl_ver=2.28.9
nccl_dir="$root/.deps/nccl"
deps_cache="${GIC_DEPS_CACHE:-}"
if [ -z "$deps_cache" ]; then
	if [ -n "${XDG_CACHE_HOME:-}" ]; then
		deps_cache="$XDG_CACHE_HOME/gic-deps"
	elif [ -n "${HOME:-}" ]; then
		deps_cache="$HOME/.cache/gic-deps"
	else
		deps_cache="$root/.deps/cache"
	fi
fi
nccl_cache="$deps_cache/nccl-$nccl_ver"
nccl_have() { grep -qs "^#define NCCL_VERSION_CODE $2\$" "$1/include/nccl.h" &&
	[ -f "$1/include/nccl_device/gin.h" ]; }
nccl_code=$(echo "$nccl_ver" | awk -F. '{ print $1 * 10000 + $2 * 100 + $3 }')
if ! nccl_have "$nccl_cache" "$nccl_code"; then
	tmp="$(mktemp -d)"
	if PIP_ROOT_USER_ACTION=ignore python3 -m pip download --quiet --disable-pip-version-check \
		--no-deps --only-binary=:all: --dest "$tmp" "nvidia-nccl-cu13==$nccl_ver" >/dev/null &&
		python3 - "$tmp" "$nccl_cache" <<'EOF'
import glob, os, shutil, sys, zipfile
tmp, cache = sys.argv[1], sys.argv[2]
wheel = glob.glob(os.path.join(tmp, "nvidia_nccl_cu13-*.whl"))[0]
stage = cache + ".part"
shutil.rmtree(stage, ignore_errors=True)
prefix = "nvidia/nccl/include/"
with zipfile.ZipFile(wheel) as z:
    for name in z.namelist():
        if name.startswith(prefix) and not name.endswith("/"):
            out = os.path.join(stage, "include", name[len(prefix):])
            os.makedirs(os.path.dirname(out), exist_ok=True)
            with z.open(name) as src, open(out, "wb") as dst:
                shutil.copyfileobj(src, dst)
shutil.rmtree(cache, ignore_errors=True)
os.rename(stage, cache)
EOF
	then
		echo "install-deps: NCCL $nccl_ver headers unpacked into $nccl_cache"
	else
		echo "install-deps: WARNING: could not fetch the nvidia-nccl-cu13==$nccl_ver wheel" \
			"(python3 -m pip failed); the NCCL GIN path of gic will not be built" >&2
	fi
	rm -rf "$tmp"
fi
if nccl_have "$nccl_cache" "$nccl_code" && ! nccl_have "$nccl_dir" "$nccl_code"; then
	rm -rf "$nccl_dir"
	mkdir -p "$nccl_dir"
	cp -r "$nccl_cache/include" "$nccl_dir/include"
	echo "install-deps: NCCL $nccl_ver headers in .deps/nccl"
fi
echo "install-deps: ok"
