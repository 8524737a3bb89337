/*
 * mini-proxy internals: the objects shared by proxy.c (lifetime, errors,
 * views), worker.c (the polling loop) and cpu.c (pinning, warm-up,
 * frequency). Not a public header.
 */
#ifndef GIC_PROXY_INTERNAL_H
#define GIC_PROXY_INTERNAL_H

#include <pthread.h>

#include "gic/proxy.h"

enum {
	PROXY_DEFAULT_LOG_SLOTS = 8,
	PROXY_DEFAULT_TIMEOUT_MS = 2000,
	PROXY_MIN_LOG_SQ_BB = 6,      /* data QP: at least 64 BBs; else room for K chains of B */
	PROXY_MAX_LOG_SQ_BB = 14,     /* softnic's doorbell word (NOTES open problem 6) */
	PROXY_LOG_COUNTER_SQ_BB = 8,  /* counter QP: several chains in flight */
	PROXY_LOG_CQE = 6,            /* data CQ: >= K + 1 signaled WQEs outstanding */
	PROXY_LOG_COUNTER_CQE = 8,    /* counter CQ: one CQE per counter SQ BB at most */
	PROXY_ORDER = GIC_ORDER_RELEASE_SYS,
};

enum proxy_state { PROXY_CREATED, PROXY_RUNNING, PROXY_STOPPED };

/* A ring as its worker sees it (the consumer side). */
typedef struct proxy_ring {
	gic_proxy_desc *slots;     /* ring memory */
	gic_proxy_ring_ctl *ctl;   /* ring memory */
	uint32_t slot_cnt;
	uint32_t log_slot_cnt;
	uint64_t taken;            /* next position the worker reads; worker-private */
} proxy_ring;

/* One descriptor taken into a chain. */
typedef struct proxy_request {
	int ring;
	uint64_t position;
	gic_proxy_desc desc;       /* as read, phase included */
	uint64_t wqe_pos;          /* send-queue position of its WQE */
} proxy_request;

typedef struct proxy_chain {
	proxy_request req[GIC_PROXY_MAX_BATCH];
	int len;
	int refused;               /* 1: `bad` is a descriptor the worker refuses */
	proxy_request bad;
	const char *why;           /* why `bad` was refused */
	uint64_t end;              /* send-queue position past its last WQE, once posted */
} proxy_chain;

/* A QP of the worker with its CQ and its connected peer (on the target PE
 * for data, on the local PE for counter updates), made through the
 * provider (gic/provider.h). */
typedef struct proxy_qp {
	gic_nic_cq *cq, *peer_cq;
	gic_nic_qp *qp, *peer_qp;
	gic_sq sq;
	gic_cq cqv;                /* sq.cq points here */
	int connected;             /* connected and viewed (a target_remote data QP: once
				    * gic_proxy_qp_connect ran) */
} proxy_qp;

typedef struct proxy_worker {
	struct gic_proxy *proxy;
	int index;
	int cpu;                   /* pinned core or the core seen at start; -1 */
	pthread_t thread;
	int running;               /* thread created, not joined */
	int rings[GIC_PROXY_MAX_RINGS];
	int nrings;
	int next_ring;             /* index into rings[] where the next sweep starts */
	/* Chains posted and not yet complete, oldest at fly_head (a ring of
	 * attr.inflight entries); worker-private. */
	proxy_chain fly[GIC_PROXY_MAX_INFLIGHT];
	uint32_t fly_head, fly_cnt;
	uint32_t unsignaled;       /* chains posted since the last signaled one */
	uint64_t stall_since;      /* when the worker last began waiting without progress; 0 */
	proxy_qp data;
	proxy_qp counter;          /* COUNTER_GPU only */
	uint64_t *fetch_buf;       /* ATOMIC_FA old values land here (never read) */
	gic_nic_mr *fetch_mr;
	int failed;                /* worker-private */
	gic_proxy_stats stats;     /* written with relaxed atomics */
} proxy_worker;

struct gic_proxy {
	gic_proxy_attr attr;
	int state;
	int stop;                  /* workers exit when set (atomic) */
	int ready;                 /* workers that reached their loop (atomic) */
	int start_err;             /* a worker's pinning error (atomic) */
	uint64_t timeout_ns;
	proxy_ring rings[GIC_PROXY_MAX_RINGS];
	proxy_worker workers[GIC_PROXY_MAX_WORKERS];
	pthread_mutex_t err_lock;
	int has_error;             /* under err_lock */
	gic_proxy_failure failure; /* under err_lock */
	char error[GIC_PROXY_ERR_LEN];
};

/* worker.c */
void *proxy_worker_main(void *arg);

/* proxy.c: records the first error of the proxy (later ones are dropped;
 * f->worker is filled in) and marks the worker's rings failed. */
void proxy_record_failure(proxy_worker *w, const gic_proxy_failure *f, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* cpu.c */
int proxy_pin_self(int cpu);               /* 0 or an errno */
int proxy_current_cpu(void);               /* -1 when unknown */
void proxy_spin_ms(int ms, const int *stop);
void proxy_sleep_ms(int ms, const int *stop); /* idle, checking stop every 10 ms */
long proxy_cpu_mhz(int cpu);               /* -1 when unknown */

static inline void stat_add(uint64_t *counter, uint64_t v)
{
	__atomic_fetch_add(counter, v, __ATOMIC_RELAXED);
}

#endif /* GIC_PROXY_INTERNAL_H */
