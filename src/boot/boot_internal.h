/*
 * Bootstrap internals: what an implementation (inproc.c, mpi.c) fills so
 * that gic/boot.h's calls reach it. Not a public header.
 */
#ifndef GIC_BOOT_INTERNAL_H
#define GIC_BOOT_INTERNAL_H

#include <stdarg.h>

#include "gic/boot.h"

enum { GIC_BOOT_ERR_LEN = 256 };

/* One implementation's operations. boot.c has checked the arguments
 * (non-NULL, len > 0) before calling them. */
typedef struct gic_boot_ops {
	const char *name; /* "inproc", "mpi": in error texts */
	int (*barrier)(gic_boot *b, uint64_t timeout_ns);
	int (*allgather)(gic_boot *b, const void *mine, size_t len, void *all,
			 uint64_t timeout_ns);
	void (*free)(gic_boot *b); /* frees b itself */
} gic_boot_ops;

/* The first member of every implementation's handle. */
struct gic_boot {
	const gic_boot_ops *ops;
	int rank;
	int size;
	char error[GIC_BOOT_ERR_LEN];
};

/* Formats the handle's latest error text. */
void gic_boot_set_error(gic_boot *b, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

#endif /* GIC_BOOT_INTERNAL_H */
