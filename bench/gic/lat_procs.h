/*
 * bench/gic/lat_procs.h - `gic lat --host --procs 2`: the mini-gda rows
 * with PE1 a process of its own (issue 14: "two PEs are two processes").
 *
 * Roles. The driver (this process) runs neither PE: it starts two PE
 * processes of this program through pe_launch.h (start_all: both at once)
 * with the hidden subcommand GIC_LAT_PE_SUBCOMMAND and a lat_pe_job. Each
 * PE opens its own NIC PE on the job's provider (host.h, hx_open_proc:
 * only gic/provider.h), and the two swap connection records through the
 * driver (pe_launch's GATHER, an allgather: each QP's gic_conn wire record
 * with the destination region's addr and rkey). PE 0 posts and times the
 * rows exactly as the one-process host mode (exp_lat.c: the same bodies)
 * and sends each row as a RESULT; PE 1 answers the round trips and checks
 * every payload it received, one VERDICT per measurement (phase). The
 * driver combines them: a row is validated only with its phase's verdict.
 *
 * Between the PEs (over the NIC, no shared memory): each PE's destination
 * region ends with a control word (lat_pe.ctrl_off) that the other PE
 * raises with an 8-byte RDMA write, a count of signals; lat_pe_signal and
 * lat_pe_await pair them. A one-way measurement runs in laps of at most
 * the region's slots: PE 1 poisons the lap's slots and signals, PE 0 posts
 * the lap and signals its end, PE 1 checks every slot. A round trip starts
 * with PE 1's signal; each side then waits for its word to change.
 *
 * Time limits: every wait on the NIC gives up after LAT_PE_WAIT_NS, the
 * record exchange after GIC_PL_INPUT_MS, each PE after the job's limit
 * (GIC_LAT_PROCS_LIMIT_S, default GIC_LAT_PROCS_LIMIT_DEFAULT_S); a PE that
 * dies ends the run (pe_launch: the other is stopped, both reported).
 *
 * Errors: 0 or a positive errno, after a message on stderr.
 */
#ifndef GIC_BENCH_LAT_PROCS_H
#define GIC_BENCH_LAT_PROCS_H

#include <stddef.h>
#include <stdint.h>

#include "exp_lat.h"
#include "host.h"
#include "pe_launch.h"

#define GIC_LAT_PE_SUBCOMMAND "__lat-pe"
#define GIC_LAT_PE_MAGIC 0x6c617470u /* "latp" */
#define GIC_LAT_PROCS_LIMIT_DEFAULT_S 300
#define LAT_PE_WAIT_NS (20 * 1000000000ull)

/* What the driver sends both PEs. */
typedef struct lat_pe_job {
	uint32_t magic;          /* GIC_LAT_PE_MAGIC */
	int32_t limit_s;         /* each PE's own time limit */
	int32_t iters, warmup, quick, provider;
	char nic[64];            /* --nic ("" none) */
	char transport[32];      /* the rows' transport (the driver's gic_transport) */
	lat_state st;            /* the mini-gda paths only */
} lat_pe_job;

/* This process's PE of the pair. */
typedef struct lat_pe {
	gic_pl_pe pl;            /* rank 0 posts and times, rank 1 answers and checks */
	int in_fd;               /* from the driver: the job, then GATHER answers */
	size_t ctrl_off;         /* the control word's offset in each destination region */
	uint64_t signals_sent;   /* control writes to the peer so far */
	uint64_t signals_seen;   /* the peer's control writes awaited so far */
	int phase;               /* the measurement being run (RESULT, VERDICT phase) */
} lat_pe;

/* The driver: runs st's mini-gda rows with the PEs as two processes on o's
 * provider (the caller checked --procs 2: lat's check_procs) and emits
 * PE 0's rows, each validated with PE 1's verdict, into sink. */
int gic_lat_procs_run(const gic_opts *o, const lat_state *st, gic_sink *sink);

/* The hidden subcommand: gic __lat-pe <rank> <npes> <in_fd> <out_fd>. The
 * exit status (0; 1 after a failure, said; 2 for bad arguments). */
int gic_lat_pe_main(int argc, char **argv);

/* An hx_swap_fn: arg is the lat_pe; the records go through the driver. */
int lat_pe_swap(void *arg, const uint8_t *mine, uint8_t *theirs, size_t len);

/* Raises the peer's control word to the next count (an 8-byte inline
 * write on QP 0 of h, waited for); 0 or errno after a message. */
int lat_pe_signal(lat_pe *pe, hx *h);

/* Waits until this PE's control word reaches the peer's next count; 0 or
 * ETIMEDOUT after a message (LAT_PE_WAIT_NS). */
int lat_pe_await(lat_pe *pe, hx *h);

/* exp_lat.c: runs the job's rows as PE pe->pl.rank, a fixture per --qps
 * count (hx_open_proc); 0 or errno (said). */
int gic_lat_pe_rows(lat_pe *pe, const gic_opts *o, const lat_state *st);

#endif /* GIC_BENCH_LAT_PROCS_H */
