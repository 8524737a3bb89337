/*
 * testkit: checks and a two-PE fixture for the host conformance suite.
 *
 * A tk_pair is two PEs in one process: each a PD, a send CQ, a receive CQ
 * and an RC QP, connected to each other. PE1 exposes a destination region
 * with guard bytes on both sides (outside the registration), so a test can
 * prove that nothing was written outside the registered region.
 */
#ifndef GIC_TESTKIT_H
#define GIC_TESTKIT_H

#include <stdint.h>
#include <stdio.h>

#include "gic/softnic.h"

/* Failures so far; checks from several threads add atomically. */
extern int tk_failures;

/* Records a failure with its location; the test goes on. */
#define CHECK(cond, ...)                                                      \
	do {                                                                  \
		if (!(cond)) {                                                \
			__atomic_fetch_add(&tk_failures, 1, __ATOMIC_RELAXED); \
			fprintf(stderr, "%s:%d: CHECK(%s) failed: ", __FILE__, \
				__LINE__, #cond);                             \
			fprintf(stderr, __VA_ARGS__);                         \
			fputc('\n', stderr);                                  \
		}                                                             \
	} while (0)

/* As CHECK, but ends the test case (returns from it) on failure. */
#define REQUIRE(cond, ...)                                                    \
	do {                                                                  \
		if (!(cond)) {                                                \
			CHECK(cond, __VA_ARGS__);                             \
			return;                                               \
		}                                                             \
	} while (0)

/* Test cases: `CASE(name) { ... }` defines one; a table of TK_ENTRY(name)
 * lists them; ctest registers each by its name (tests/CMakeLists.txt
 * reads the CASE lines). */
#define CASE(name) static void case_##name(void)
#define TK_ENTRY(n) { #n, case_##n }

typedef struct tk_case {
	const char *name;
	void (*fn)(void);
} tk_case;

/* Runs the case named argv[1], or every case without an argument; prints
 * one line per case with its time. Returns the process exit code: 0 all
 * passed, 1 a failure, 2 no such case. */
int tk_run_cases(const char *prog, const tk_case *cases, size_t n, int argc, char **argv);

enum { TK_GUARD = 4096, TK_DEADLINE_NS = 5000000000ull };

typedef struct tk_pe {
	softnic_pd *pd;
	softnic_cq *cq;
	softnic_cq *rcq;
	softnic_qp *qp;
	gic_sq sq;
	gic_cq cqv;
	gic_cq rcqv;
} tk_pe;

/* Where a tk_pair's softnic and memory come from: by default the CPU
 * engine and host memory; gic-gpu-fidelity installs the GPU engine's
 * (tests/gpu/tk_gpu_engine.c), so the same cases check both engines. */
typedef struct tk_engine {
	const char *name;
	/* attr->engine_threads 0: the engine runs only inside
	 * softnic_progress() (the GPU engine: on demand), else on its own. */
	softnic *(*open)(const softnic_attr *attr);
	void *(*alloc)(size_t len); /* memory both the engine and this thread reach */
	void (*free)(void *p);
} tk_engine;

extern const tk_engine *tk_engine_used;

/* Installs the GPU engine as tk_engine_used (tests/gpu/tk_gpu_engine.c:
 * only in a GPU build, whose case programs call it first, compiled with
 * TK_GPU_ENGINE). Exits with a message when there is no usable GPU. */
void tk_engine_setup(void);

/* Memory from the engine's allocator (NULL on failure), and back. */
void *tk_mem_alloc(size_t len);
void tk_mem_free(void *p);

typedef struct tk_pair_cfg {
	int engine_threads;   /* 0: tests drive softnic_progress() */
	int strict;
	uint64_t doorbell_watch_ns; /* 0: softnic's default */
	int log_rq_wqe;       /* PE1's receive queue (0: none) */
	int rq_max_sge;
	softnic_srq *(*make_srq)(softnic_pd *pd); /* PE1 takes receives from it */
	int rnr_retry;        /* PE0's */
	int min_rnr_timer;    /* PE1's */
	uint32_t qp_flags;    /* both QPs' */
	uint32_t cq_mode;     /* PE0's send CQ's */
	int log_sq_bb;        /* default 10 */
	int log_cqe_cnt;      /* default 10 */
	size_t region;        /* destination and source sizes, default 1 MiB */
	int dst_access;       /* default REMOTE_WRITE | REMOTE_ATOMIC | LOCAL_WRITE */
	int no_recv_cq;
} tk_pair_cfg;

typedef struct tk_pair {
	softnic *nic;
	tk_pe pe[2];
	uint8_t *dst_alloc;   /* guard | region | guard */
	uint8_t *dst;         /* PE1's registered region */
	uint8_t *src;         /* PE0's registered region */
	softnic_mr *dst_mr;
	softnic_mr *src_mr;
	size_t region;
	softnic_srq *srq;     /* PE1's, when cfg.make_srq made one */
} tk_pair;

/* Builds the fixture; NULL (with a message on stderr) on failure. */
tk_pair *tk_pair_open(const tk_pair_cfg *cfg);
void tk_pair_close(tk_pair *p);

/* 1 when both guard zones still hold their fill pattern. */
int tk_guards_intact(const tk_pair *p);

/* Fills buf with bytes derived from seed (never all-zero). */
void tk_fill(uint8_t *buf, size_t len, uint64_t seed);

/* Absolute deadline TK_DEADLINE_NS from now. */
uint64_t tk_deadline(void);

/* Polls one CQE from a CQ view within the deadline, driving
 * softnic_progress() when the nic has no engine thread. 0, or ETIMEDOUT. */
int tk_poll_cqe(tk_pair *p, gic_cq *cq, gic_cqe_info *out);

/* Polls the next CQE of cq and checks its kind (CQE opcode, syndrome,
 * vendor syndrome, QP number); what names the step in failure messages.
 * Returns 0 when it matched, 1 when not (each mismatch is a CHECK). */
int tk_expect_cqe(tk_pair *p, gic_cq *cq, uint8_t cqe_opcode, uint8_t syndrome, uint8_t vs,
		  uint32_t qpn, const char *what);

/* gic_sq_wait_retired, driving progress when there is no engine thread. */
int tk_wait_retired(tk_pair *p, gic_sq *sq, uint64_t target);

/* Posts one inline write from PE0 to dst + off and rings (exclusive). */
int tk_post_inline(tk_pair *p, uint64_t off, const void *data, uint32_t len, int signaled);

/* Posts one pointer write src + soff -> dst + doff and rings (exclusive). */
int tk_post_pointer(tk_pair *p, uint64_t soff, uint64_t doff, uint32_t len, int signaled);

/* xorshift64 random numbers for the tests. */
uint64_t tk_rand(uint64_t *state);

#endif /* GIC_TESTKIT_H */
