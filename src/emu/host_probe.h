/*
 * host_probe.h - whether a range is host memory this process can read,
 * for the emulated libibverbs (MRs) and libmlx5 (DEVX umems): the CPU
 * engine reads and writes what an MR or a umem covers, and an unmapped or
 * GPU-only range would crash it at the first WQE. Not a public header.
 */
#ifndef GIC_EMU_HOST_PROBE_H
#define GIC_EMU_HOST_PROBE_H

#include <stddef.h>
#include <stdint.h>
#include <unistd.h>

/* 1 when the first and last bytes of [addr, addr + len) are readable host
 * memory: the kernel's copy from the range into a pipe fails with EFAULT
 * otherwise (1 as well when no pipe can be made: cannot tell). */
static inline int emu_host_readable(const void *addr, size_t len)
{
	const uint8_t *ends[2] = { (const uint8_t *)addr, (const uint8_t *)addr + len - 1 };
	int fds[2], ok = 1;
	uint8_t sink[2];

	if (pipe(fds))
		return 1;
	for (int i = 0; i < 2 && ok; i++)
		ok = write(fds[1], ends[i], 1) == 1;
	if (ok && read(fds[0], sink, 2) != 2)
		ok = 0;
	close(fds[0]);
	close(fds[1]);
	return ok;
}

#endif /* GIC_EMU_HOST_PROBE_H */
