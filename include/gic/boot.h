/*
 * gic/boot.h - PE bootstrap: the few collective steps PEs need to connect
 * (exchange connection records, wait for each other).
 *
 * One interface, two implementations behind it (a small table of
 * operations in each handle): in-process (gic_boot_inproc: PEs are threads
 * of one process) and MPI (gic_boot_mpi: one PE per process, `mpiexec -n
 * N`, across hosts). Every call that waits takes a time limit and returns
 * ETIMEDOUT when the other PEs do not arrive, so a vanished PE never hangs
 * the rest. Once a wait has timed out the group is broken: every later
 * wait of that handle fails at once with ETIMEDOUT.
 *
 * Collective calls (barrier, allgather) must be made by every PE in the
 * same order. A handle is used by one thread at a time.
 *
 * Errors: 0 or a positive errno, with gic_boot_last_error() naming what
 * failed; constructors return NULL and set errno.
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

/* One PE per MPI process, over a duplicate of MPI_COMM_WORLD; rank and size
 * are MPI's. Calls MPI_Init(argc, argv) when MPI is not initialised yet
 * (argc and argv may be NULL) and then MPI_Finalize() in gic_boot_free().
 * Only in builds that found MPI (the gic_boot_mpi library, GIC_HAVE_MPI).
 * NULL with errno EIO (MPI failed; the text is on stderr) or ENOMEM. */
gic_boot *gic_boot_mpi(int *argc, char ***argv);

/* Frees the handle (MPI: finalises MPI when gic_boot_mpi initialised it,
 * which waits for every PE to finalise; not after a failed call, when a
 * PE may be gone for good). NULL is ignored. */
void gic_boot_free(gic_boot *b);

/* Text of the handle's latest error ("" if none): which call, which PE,
 * what failed. */
const char *gic_boot_last_error(const gic_boot *b);

int gic_boot_rank(const gic_boot *b);
int gic_boot_size(const gic_boot *b);

/* Waits until every PE of the group has called it; ETIMEDOUT after
 * timeout_ns (MPI: also when the library reports an error, EIO). */
int gic_boot_barrier(gic_boot *b, uint64_t timeout_ns);

/* Every PE contributes len bytes (the same len everywhere: EINVAL if not);
 * all[r * len ...] receives PE r's bytes, for every r. */
int gic_boot_allgather(gic_boot *b, const void *mine, size_t len, void *all,
		       uint64_t timeout_ns);

#ifdef __cplusplus
}
#endif

#endif /* GIC_BOOT_H */
