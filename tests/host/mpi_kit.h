/*
 * mpi_kit: what the multi-process softnic tests share (test_mpi on the host,
 * gic-gpu-mpi with GPU regions): one PE per process over the MPI bootstrap,
 * failure reports, the transfer's pattern and checks, the connection
 * exchange, the verdict. Test code only; C, callable from CUDA C.
 *
 * A test calls mk_init before anything else; mk_boot fills mk.me and
 * mk.npe. Every wait has mk.wait_ns as its limit.
 */
#ifndef GIC_TESTS_MPI_KIT_H
#define GIC_TESTS_MPI_KIT_H

#include <stddef.h>
#include <stdint.h>

#include "gic/boot.h"
#include "gic/conn.h"
#include "gic/softnic_shm.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct mk_state {
	const char *prog;  /* prefix of every failure line: "test_mpi" */
	int me, npe;       /* this PE, how many (mk_boot) */
	int failures;      /* FAILs so far on this PE */
	uint64_t wait_ns;  /* any one wait */
	uint32_t slice;    /* bytes each PE writes into each other PE */
	int natomic;       /* ATOMIC_FA each PE adds to each other PE's counter */
	size_t guard;      /* bytes of 0xa5 after each region */
	uint64_t salt;     /* makes each test's pattern its own */
} mk_state;

extern mk_state mk;

/* Sets mk's name, wait limit and transfer layout (see mk_state), and makes
 * stdout line-buffered (verdict lines reach mpiexec whole and in order). */
void mk_init(const char *prog, uint64_t wait_ns, uint32_t slice, int natomic, size_t guard,
	     uint64_t salt);

/* 1 when name is one of the NULL-ended cases; else prints "usage: mpiexec
 * -n N <argv0> a|b|..." and returns 0. */
int mk_known_case(const char *name, const char *argv0, const char *const *cases);

/* Counts a failure and prints "<prog> PE <me>: file:line: <message>". */
void mk_fail(const char *file, int line, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
#define FAIL(...) mk_fail(__FILE__, __LINE__, __VA_ARGS__)

/* "syndrome 0x.. (NAME), vendor syndrome 0x.. (text)"; a static buffer. */
const char *mk_cqe_text(uint8_t synd, uint8_t vs);

/* Where the atomic counter is in a region: after npe slices. */
size_t mk_counter_off(void);

/* The len bytes PE src writes into PE dst: never zero. */
void mk_pattern(uint8_t *buf, size_t len, int src, int dst);

/* The MPI bootstrap for 2..maxpe PEs; fills mk.me and mk.npe. NULL after
 * a FAIL when it cannot start or the PE count is wrong; *rc says why. */
gic_boot *mk_boot(int *argc, char ***argv, int maxpe, int *rc);

/* softnic_open_shared with one engine thread and an arena of arena bytes;
 * NULL after a FAIL (errno set). */
softnic *mk_open(gic_boot *b, size_t arena);

/* A CQ and a QP on it for queue k to PE p (recv: its receives complete on
 * that CQ too), and their host views. 0, or ENOMEM after a FAIL. */
int mk_qp_open(softnic *nic, softnic_pd *pd, int p, int k, int recv, softnic_cq **cq,
	       softnic_qp **qp, gic_sq *sq, gic_cq *cqv);

/* Packs qp's connection record (port 1, MTU 4096, addr, rkey) into rec. */
void mk_conn_record(softnic_qp *qp, uint64_t addr, uint32_t rkey, uint8_t *rec);

/* Swaps records and connects: mine holds npe x nqp records (none for this
 * PE); qp and theirs are [maxpe][nqp] arrays, flattened. Ends with a
 * barrier, so every half is connected before anyone writes. 0, or the
 * error after a FAIL. */
int mk_connect(gic_boot *b, softnic *nic, int nqp, const void *mine, softnic_qp **qp,
	       gic_conn_info *theirs);

/* Posts one signaled inline write of len bytes of data on sq and waits
 * for it until deadline: 0, the reserve's error, or the poller's (EIO: an
 * error CQE, in sq->err_info). */
int mk_write_wait(gic_sq *sq, uint64_t raddr, uint32_t rkey, const void *data, uint32_t len,
		  uint64_t deadline);

/* The outcome (rc, syndrome, vendor syndrome) of what on qp to PE p: FAILs
 * unless it is an error CQE with synd / vs and the QP is in error. */
void mk_check_bad(int rc, uint8_t got_synd, uint8_t got_vs, softnic_qp *qp, int p,
		  uint8_t synd, uint8_t vs, const char *what);

/* Checks a received region (got: slices, counter, guard; region_len bytes
 * before the guard): every peer's pattern, zeros in this PE's own slice,
 * the counter, the guard. */
void mk_check_received(const uint8_t *got, size_t region_len);

/* Checks the natomic old values fetched from PE p's counter, f. */
void mk_check_fetched(const uint64_t *f, int p);

/* After name's writes to PE 1 ended with rc (sq: the writing queue; writes
 * done since t0): FAILs unless it ended with a PEER_GONE error CQE. 1 when
 * it did. */
int mk_check_peer_gone(int rc, const gic_sq *sq, const char *name, uint64_t writes,
		       uint64_t t0);

/* A transfer's own parts, for mk_transfer; ctx is the test's. */
typedef struct mk_transfer_ops {
	/* Writes this PE's slice of PE p's region, then its ATOMIC_FAs. */
	void (*put)(void *ctx, int p);
	/* Checks the values those ATOMIC_FAs fetched. */
	void (*check_fetched)(void *ctx, int p);
	/* Posts one write on QP k to PE p that must fail with synd / vs. */
	void (*bad_write)(void *ctx, int p, int k, uint64_t raddr, uint32_t rkey, uint32_t len,
			  uint8_t synd, uint8_t vs, const char *what);
	/* More error checks to PE p (NULL: none), how many. */
	void (*more_bad)(void *ctx, int p);
	int n_more_bad;
	/* Checks this PE's region once every PE's writes are complete. */
	void (*check_received)(void *ctx);
	/* The end of rank 0's verdict line: "" or ", what else". */
	const char *note;
} mk_transfer_ops;

/* The transfer case: put to every other PE, then per peer the fetched
 * values and two error checks (a bad rkey on QP 1, a write past the
 * region_len bytes on QP 2; theirs: [maxpe][nqp], flattened), a barrier,
 * the received region, and every PE's outcome; rank 0 prints "<prog>
 * transfer: PASSED on ..." only when every PE passed. 0 then, else 1. */
int mk_transfer(gic_boot *b, const mk_transfer_ops *ops, void *ctx, const gic_conn_info *theirs,
		int nqp, size_t region_len);

/* Gathers every PE's failure count: 1 when every PE passed, 0 otherwise
 * (after a FAIL if the gather itself failed). */
int mk_all_passed(gic_boot *b);

#ifdef __cplusplus
}
#endif

#endif
