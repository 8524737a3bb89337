/*
 * The bootstrap interface (gic/boot.h): argument checks, then the
 * implementation's operation.
 */
#include <errno.h>
#include <stdio.h>

#include "boot_internal.h"

void gic_boot_set_error(gic_boot *b, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(b->error, sizeof(b->error), fmt, ap);
	va_end(ap);
}

void gic_boot_free(gic_boot *b)
{
	if (b)
		b->ops->free(b);
}

int gic_boot_rank(const gic_boot *b) { return b->rank; }
int gic_boot_size(const gic_boot *b) { return b->size; }
const char *gic_boot_last_error(const gic_boot *b) { return b ? b->error : ""; }

int gic_boot_barrier(gic_boot *b, uint64_t timeout_ns)
{
	if (!b)
		return EINVAL;
	return b->ops->barrier(b, timeout_ns);
}

int gic_boot_allgather(gic_boot *b, const void *mine, size_t len, void *all, uint64_t timeout_ns)
{
	if (!b)
		return EINVAL;
	if (!mine || !all || !len) {
		gic_boot_set_error(b, "%s allgather: NULL buffer or length 0", b->ops->name);
		return EINVAL;
	}
	return b->ops->allgather(b, mine, len, all, timeout_ns);
}
