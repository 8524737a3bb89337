#!/bin/sh
# emu.wrapper_sysfs: `gic-emu --sysfs` either gives the program a
# /sys/class/infiniband/mlx5_0 whose `device` resolves to a directory (and
# whose RoCE GID types read back), or refuses with its one-line reason and
# status 2 where this machine cannot mount (no ib_core class, no right).
# Anything else fails.
wrapper=$1
out=$(GIC_EMU_LINK=roce "$wrapper" --sysfs sh -c \
	'p=$(realpath /sys/class/infiniband/mlx5_0/device) && [ -d "$p" ] && echo "device: $p" &&
	 cat /sys/class/infiniband/mlx5_0/ports/1/gid_attrs/types/1' 2>&1)
rc=$?
if [ "$rc" = 0 ]; then
	case "$out" in
	*"device: /"*"RoCE v2"*) echo "sysfs: $out"; exit 0 ;;
	esac
	echo "sysfs: ran, but printed: $out" >&2
	exit 1
fi
case "$out" in
"gic-emu --sysfs: "*) [ "$rc" = 2 ] && { echo "sysfs: not here: $out"; exit 0; } ;;
esac
echo "sysfs: status $rc, output: $out" >&2
exit 1
