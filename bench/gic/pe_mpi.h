/*
 * bench/gic/pe_mpi.h - the MPI handle of `--launch mpi` (pe_pair.h: the
 * two PEs of --procs 2 as the two ranks of an MPI job, `mpirun -np 2 gic
 * ... --procs 2 --launch mpi`).
 *
 * The handle is gic/boot.h's MPI bootstrap (src/boot/mpi.c), built as a
 * module of its own beside gic (gic-boot-mpi.so, linked against the MPI
 * library CMake found) and opened with dlopen only when --launch mpi is
 * asked: gic itself does not need libmpi to start (issue 14, item 4), and
 * a gic copied without the module says so when --launch mpi is asked.
 * GIC_MPI_MODULE names another module file.
 *
 * Errors: 0 or a positive errno, after a message on stderr.
 */
#ifndef GIC_BENCH_PE_MPI_H
#define GIC_BENCH_PE_MPI_H

#include <stddef.h>

#include "gic/boot.h"

#define GIC_MPI_MODULE_ENV "GIC_MPI_MODULE"

/* 1 when this gic was built with the MPI module (CMake found MPI), else 0. */
int gic_mpi_built(void);

/* 1 when an MPI launcher started this process as one of several ranks
 * (its environment says so: PMI_SIZE, OMPI_COMM_WORLD_SIZE above 1), with
 * "NAME=VALUE" of the variable in what; else 0. Nothing is loaded. */
int gic_mpi_launched(char *what, size_t len);

/* Loads the module and initialises MPI: *b is this rank's handle (rank and
 * size MPI's), freed with gic_boot_free (which finalises MPI). sub names
 * the experiment in messages. 0; ENOTSUP (built without MPI), ENOENT (the
 * module could not be loaded: the loader's reason is said) or EIO (MPI
 * failed to initialise). */
int gic_mpi_open(const char *sub, gic_boot **b);

#endif /* GIC_BENCH_PE_MPI_H */
