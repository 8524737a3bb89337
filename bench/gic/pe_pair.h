/*
 * bench/gic/pe_pair.h - `--procs 2` of the host modes: the two PEs of an
 * experiment as two processes of this program (issue 14: "two PEs are two
 * processes"), what gic lat, rate, proxy, payload, loaded, kernel and conns share. Each
 * experiment keeps its measurement bodies; the same bodies run with both
 * PEs in one process (pair NULL in every helper below) or as one PE of a
 * pair.
 *
 * Roles. The driver (this process) runs neither PE: gic_pair_run() starts
 * two PE processes of this program through pe_launch.h (start_all) with
 * the hidden subcommand GIC_PAIR_SUBCOMMAND and a job: the experiment's
 * name, the common options, the NIC and transport names and the
 * experiment's parsed state (bytes, no pointers). Each PE finds the
 * experiment (gic_experiment_find) and runs its run_pe (exp.h) as PE
 * pair->pl.rank. PE 0 posts and times, and sends every row as a RESULT of
 * the phase (the measurement) being run; PE 1 receives, checks every
 * payload byte of the phase and sends its VERDICT. The driver combines
 * them: a row is validated only with its phase's verdict. A fixture is
 * opened through gic_pair_open (hx_open_proc): the QPs' connection records
 * swapped through the driver (pe_launch's GATHER).
 *
 * Between the PEs (over the NIC, no shared memory): each PE's destination
 * region ends with a control word (gic_pair.ctrl_off) that the other PE
 * raises with an 8-byte RDMA write, a count of signals. A measurement (or
 * a lap of one) is bracketed by gic_pair_begin (PE 1 has prepared its
 * destination: it signals, PE 0 waits) and gic_pair_end (PE 0's writes
 * have completed: it signals, PE 1 waits and then checks); where both PEs
 * write (gic loaded) gic_pair_sync starts a measurement, and what each PE
 * counted (its writers' messages) goes to the other through
 * gic_pair_exchange.
 *
 * Two launches (--launch). fork, the default: as above, the driver
 * starting both PEs and relaying their records (pe_launch.h). mpi: the
 * two ranks of an MPI job are the PEs (rank = PE), e.g. `mpirun -np 2 -H
 * a,b gic lat --host --procs 2 --launch mpi --provider mlx5`: rank 0 is
 * the driver and PE 0 in one process; rank 1 serves (gic_pair_mpi_serve)
 * every job rank 0 sends until rank 0's end (gic_pair_mpi_stop). Each
 * gic_pair_run sends rank 1 the same job through MPI (gic/boot.h's
 * allgather, pe_mpi.h), and the records the fork launch sends through
 * the driver go through MPI too: GATHER rounds as frames each way, RESULT
 * kept in rank 0, VERDICT kept in rank 1 and sent with its DONE, a frame
 * each way at the end of the job (each PE's status). Rank 0 combines them
 * as the driver does and adds launch=mpi to every row's params. The
 * experiments' run_pe bodies are the same in both launches.
 *
 * Time limits: gic_pair_begin waits GIC_PAIR_WAIT_NS, gic_pair_end up to
 * the PE's own limit (a measurement may be long), the record exchange
 * GIC_PL_INPUT_MS (gic_pair_exchange_late: the PE's own limit), each PE the job's limit (GIC_PAIR_LIMIT_ENV, default
 * GIC_PAIR_LIMIT_DEFAULT_S); a PE that dies ends the run (pe_launch: the
 * other is stopped, both reported). --launch mpi: every MPI wait has a
 * limit too (the job GIC_PL_INPUT_MS, a record swap as above, the end of
 * a job the PE's own limit, GIC_PAIR_MPI_END_MS after this PE failed),
 * each rank arms its own alarm (rank 0: the limit plus GIC_PL_SLACK_S),
 * and a rank whose peer does not answer says so ("gic lat: PE 1 (MPI
 * rank 1) did not answer within 10 s (...)") and ends; the launcher may
 * end the job first (MPICH's hydra does when a rank is killed by a
 * signal, or exits without -disable-auto-cleanup; its SIGUSR1 notice is
 * ignored).
 *
 * Errors: 0 or a positive errno, after a message on stderr.
 */
#ifndef GIC_BENCH_PE_PAIR_H
#define GIC_BENCH_PE_PAIR_H

#include <stddef.h>
#include <stdint.h>

#include "exp.h"
#include "gic/boot.h"
#include "host.h"
#include "pe_launch.h"

#define GIC_PAIR_SUBCOMMAND "__pe-pair"
#define GIC_PAIR_MAGIC 0x70616972u /* "pair" */
#define GIC_PAIR_LIMIT_ENV "GIC_PROCS_LIMIT_S"
#define GIC_PAIR_LIMIT_DEFAULT_S 300
#define GIC_PAIR_WAIT_NS (20 * 1000000000ull)
#define GIC_PAIR_MPI_END_MS 10000 /* --launch mpi: the end of a job this PE failed */

enum { GIC_PAIR_STATE_MAX = 8192 }; /* bytes of an experiment's state in the job */

/* This process's PE of the pair. */
typedef struct gic_pair {
	gic_pl_pe pl;            /* rank 0 posts and times, rank 1 receives and checks */
	int in_fd;               /* from the driver: the job, then GATHER answers */
	int limit_s;             /* the PE's own time limit (the job's) */
	size_t ctrl_off;         /* the control word's offset in each destination region */
	uint64_t signals_sent;   /* control writes to the peer so far */
	uint64_t signals_seen;   /* the peer's control writes awaited so far */
	int phase;               /* the measurement being run (RESULT, VERDICT phase) */
	/* --launch mpi: the records go through boot (NULL: through the driver). */
	gic_boot *boot;
	int nphases;             /* the job's phases */
	int max_results;         /* the rows PE 0 may put */
	int nres;                /* PE 0: the rows put so far */
	gic_result *res;         /* PE 0: [max_results] the rows put */
	int *res_phase;          /* PE 0: [max_results] the phase of each */
	int *verdict;            /* PE 1: [nphases] each phase's verdict, -1 none yet */
} gic_pair;

/* ------------------------------------------------------------------ */
/* Driver side. */

/* Runs experiment sub's --procs 2 (the caller checked it: main's
 * check_procs) with its state (state_len bytes, at most
 * GIC_PAIR_STATE_MAX, copied into the job) on o's provider; emits PE 0's
 * rows (at most max_results, phases 0..nphases-1), each validated only
 * with PE 1's verdict of its phase, into sink. o->launch GIC_LAUNCH_MPI:
 * this process (rank 0, after gic_pair_mpi_start) is PE 0, rank 1 PE 1;
 * EIO when a PE failed (said). */
int gic_pair_run(const gic_opts *o, const char *sub, const void *state, size_t state_len,
		 int nphases, int max_results, gic_sink *sink);

/* A check_procs (exp.h) for an experiment whose every host-mode flag
 * runs as a pair: 0. */
int gic_pair_check_any(const gic_opts *o, const void *state);

/* For run_pe's checks of a job's state: 1 when n is in 1..max_n and each
 * of v[0..n) in 1..hi, else 0. */
int gic_pair_list_ok(const int *v, int n, int max_n, int hi);

/* The hidden subcommand: gic __pe-pair <rank> <npes> <in_fd> <out_fd>. The
 * exit status (0; 1 after a failure, said; 2 for bad arguments). */
int gic_pair_main(int argc, char **argv);

/* --launch mpi: opens the MPI job's handle (pe_mpi.h) for experiment sub
 * and checks that the job has two ranks; *rank is this process's. 0;
 * EINVAL (another world size: rank 0 says so, every rank should exit
 * 2), or gic_mpi_open's errno (said). */
int gic_pair_mpi_start(const char *sub, int *rank);

/* --launch mpi, rank 1: runs PE 1 of every job rank 0 sends, until rank 0
 * ends the run (gic_pair_mpi_stop) or does not answer within the limits;
 * this rank's stdout goes to its stderr (rank 0's carries the table).
 * Frees the handle. The exit status: 0; 1 after a failure (said). */
int gic_pair_mpi_serve(void);

/* --launch mpi, rank 0: tells rank 1 the run is over (waiting up to
 * GIC_PL_INPUT_MS; nothing to tell when the handle is broken already)
 * and frees the handle (MPI finalised when every rank answered). */
void gic_pair_mpi_stop(void);

/* ------------------------------------------------------------------ */
/* PE side: the helpers of the experiments' bodies. pair NULL: both PEs
 * in this process (the one-process host mode). */

/* This process's PE: its rank, or 0 with both PEs here. */
int gic_pair_rank(const gic_pair *pair);

/* 1 when this process posts and times (one process, or PE 0). */
int gic_pair_posts(const gic_pair *pair);

/* 1 when this process receives and checks the payloads (one process, or
 * PE 1). */
int gic_pair_checks(const gic_pair *pair);

/* Opens the fixture of c: hx_open (pair NULL), or this PE of the pair
 * (hx_open_proc, the records swapped through the driver) with the control
 * word after c->region. *h NULL on failure, after hx's message. */
int gic_pair_open(gic_pair *pair, hx **h, const hx_cfg *c);

/* The start of a measurement (or a lap): PE 1, its destination prepared,
 * signals; PE 0 waits for it (GIC_PAIR_WAIT_NS). 0 (pair NULL: at once),
 * or errno after a message. */
int gic_pair_begin(gic_pair *pair, hx *h);

/* The end of a measurement (or a lap): PE 0, its writes completed,
 * signals; PE 1 waits for it (up to the PE's own limit), then may check
 * its destination. 0 (pair NULL: at once), or errno after a message. */
int gic_pair_end(gic_pair *pair, hx *h);

/* A barrier between measurements whose writes go both ways: each PE has
 * prepared its destination; PE 1 signals, PE 0 waits, then PE 0 signals
 * and PE 1 waits (each GIC_PAIR_WAIT_NS). 0 (pair NULL: at once), or
 * errno after a message. */
int gic_pair_sync(gic_pair *pair, hx *h);

/* Swaps len bytes (1..GIC_PL_GATHER_MAX) with the peer through the driver
 * (an allgather, GIC_PL_INPUT_MS; --launch mpi: through MPI): mine to the peer, the peer's into
 * theirs. For what a PE counted (not payload: that goes over the NIC);
 * call it after this PE's writes have completed. 0 (pair NULL: nothing
 * copied), or EINVAL for a bad len; a PE whose peer does not answer dies
 * (pe_launch: the driver reports it). */
int gic_pair_exchange(gic_pair *pair, const void *mine, void *theirs, size_t len);

/* gic_pair_exchange waiting up to the PE's own limit (limit_s) instead of
 * GIC_PL_INPUT_MS: a swap that waits out the other PE's measurement (the
 * barriers of gpu_pair.h, whose PEs have no control word). */
int gic_pair_exchange_late(gic_pair *pair, const void *mine, void *theirs, size_t len);

/* Swaps n connection records (local: this PE's) with the peer through
 * the driver, HX_SWAP_CHUNK a round (hx_swap_records): remote[0..n)
 * receives the peer's. Both PEs call it with the same n. 0, or errno
 * after a message. */
int gic_pair_swap_records(gic_pair *pair, const gic_conn_info *local, gic_conn_info *remote,
			  int n);

/* Hands result r on: into sink (pair NULL), or (PE 0) to the driver as
 * the RESULT of the phase being run; PE 1 drops it. 0 or ENOMEM. */
int gic_pair_put(gic_pair *pair, gic_sink *sink, const gic_result *r);

/* The end of one phase (its rows put): PE 1 sends its verdict (valid 1:
 * every payload it received checked out); both PEs count the phase.
 * Nothing for pair NULL. */
void gic_pair_phase_done(gic_pair *pair, int valid);

#endif /* GIC_BENCH_PE_PAIR_H */
