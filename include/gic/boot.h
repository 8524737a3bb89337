/*
 * gic/boot.h - PE bootstrap: the few collective steps PEs need to connect
 * (exchange connection records, wait for each other).
 *
 * One interface, implementations behind it: in-process (PEs are threads of
 * one process; this file) and MPI (one PE per process; issue 6, to come).
 * Every call that waits takes a time limit and returns ETIMEDOUT when the
 * other PEs do not arrive, so a vanished PE never hangs the rest.
 *
 * Errors: 0 or a positive errno; constructors return NULL and set errno.
 */
#ifndef GIC_BOOT_H
#define GIC_BOOT_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct gic_boot gic_boot;
typedef struct gic_boot_group gic_boot_group;

/* A group of size in-process PEs (2..1024). */
gic_boot_group *gic_boot_group_create(int size);

/* Frees the group; every PE handle of it must be freed first (EBUSY). */
int gic_boot_group_destroy(gic_boot_group *g);

/* The handle of PE rank of the group, for the thread that runs that PE.
 * EINVAL for a rank out of range, EBUSY when that rank is taken. */
gic_boot *gic_boot_inproc(gic_boot_group *g, int rank);

void gic_boot_free(gic_boot *b);

int gic_boot_rank(const gic_boot *b);
int gic_boot_size(const gic_boot *b);

/* Waits until every PE of the group has called it. */
int gic_boot_barrier(gic_boot *b, uint64_t timeout_ns);

/* Every PE contributes len bytes (the same len everywhere: EINVAL if not);
 * all[r * len ...] receives PE r's bytes, for every r. */
int gic_boot_allgather(gic_boot *b, const void *mine, size_t len, void *all,
		       uint64_t timeout_ns);

#ifdef __cplusplus
}
#endif

#endif /* GIC_BOOT_H */
