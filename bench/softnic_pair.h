/*
 * bench/softnic_pair.h - the example programs' fixture (gic-demo,
 * bench-cpu-engine): two PEs on one softnic opened directly (not through
 * gic/provider.h, so that strict mode, statistics, QP numbers and up to 64
 * CPU engine threads stay at hand), each a protection domain; `qps` RC QP
 * pairs (PE0 QP i <-> PE1 QP i, each with a CQ of its own), a destination
 * region on PE1 (REMOTE_WRITE) and optionally a source region on PE0
 * (LOCAL_WRITE). All PE0 QPs are created before PE1's, so softnic's
 * round-robin puts PE0 QP i on engine thread i % engine_threads. PE1's
 * QPs post nothing: rings and CQs of 2^SP_PEER_LOG entries.
 *
 * Errors: constructors return NULL and set errno after a message on
 * stderr, "WHO: setup: WHAT: REASON (softnic's account)".
 */
#ifndef GIC_BENCH_SOFTNIC_PAIR_H
#define GIC_BENCH_SOFTNIC_PAIR_H

#include <stddef.h>
#include <stdint.h>

#include "gic/softnic.h"

enum { SP_PEER_LOG = 6 };

typedef struct sp_cfg {
	const char *who;    /* the program, for messages ("gic-demo") */
	int engine_threads; /* softnic CPU engine threads (1..64) */
	int strict;         /* 1: softnic strict mode */
	int qps;            /* QP pairs (1..) */
	int log_sq_bb;      /* PE0 rings of 2^n BBs */
	int log_cq;         /* PE0 CQs of 2^n CQEs */
	size_t dst_bytes;   /* PE1's destination region (> 0) */
	size_t src_bytes;   /* PE0's source region; 0: none */
} sp_cfg;

/* QP pair i: PE0's QP (its host views sq and cq, sq.cq pointing at cqv)
 * and its PE1 peer. */
typedef struct sp_qp {
	softnic_qp *qp, *peer;
	softnic_cq *cq, *peer_cq;
	gic_sq sq;
	gic_cq cqv;
} sp_qp;

typedef struct softnic_pair {
	sp_cfg c;
	softnic *nic;
	softnic_pd *pd[2];
	sp_qp *q;                 /* c.qps pairs */
	uint8_t *src, *dst;       /* zeroed; src NULL without c.src_bytes */
	softnic_mr *src_mr, *dst_mr;
	uint32_t src_lkey, dst_rkey;
} softnic_pair;

/* Opens the pair (connected, viewed). NULL and errno after a message. */
softnic_pair *sp_open(const sp_cfg *c);

/* Frees what sp_open made (NULL: nothing). */
void sp_close(softnic_pair *p);

/* Prints why a post or wait on QP pair q failed (rc): "WHO: WHAT: ..."
 * (a timeout, an error CQE with its syndrome, or the errno), then the QP's
 * error and softnic's last error. Returns rc. */
int sp_fail(const softnic_pair *p, int q, const char *what, int rc);

#endif /* GIC_BENCH_SOFTNIC_PAIR_H */
