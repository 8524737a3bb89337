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
echo "install-deps: ok"
