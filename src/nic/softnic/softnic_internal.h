/*
 * softnic internals: object layout shared by objects.c, execute.c and
 * engine_cpu.c. Not a public header.
 */
#ifndef SOFTNIC_INTERNAL_H
#define SOFTNIC_INTERNAL_H

#include <pthread.h>
#include <stdarg.h>

#include "gic/softnic.h"

enum {
	SOFTNIC_MAX_MR = 4096,     /* MR slots; key = slot << 8 | generation */
	SOFTNIC_MAX_QP_PER_ENGINE = 1024,
	SOFTNIC_ERR_LEN = 256,
	SOFTNIC_CACHELINE = 64,
};

/* One MR slot. Engines read it without a lock: register writes the fields
 * and then releases key; deregister clears key; a lookup re-reads key after
 * the fields so that a concurrent change is never half-seen. */
typedef struct mr_slot {
	uint32_t key;      /* 0: free */
	uint32_t access;
	uint64_t addr;
	uint64_t len;
	softnic_pd *pd;
	uint8_t generation;
} mr_slot;

/* Every PD, MR and CQ is on its softnic's list, so softnic_close() can
 * free what the user left. */
typedef struct obj_link {
	struct obj_link *prev, *next;
} obj_link;

struct softnic_mr {
	obj_link link;     /* first member */
	softnic *nic;
	uint32_t slot;
	uint32_t key;
};

struct softnic_pd {
	obj_link link;     /* first member */
	softnic *nic;
	int users;         /* MRs and QPs */
};

struct softnic_cq {
	obj_link link;     /* first member */
	softnic *nic;
	uint32_t cqn;
	gic_cqe64 *cqes;
	uint32_t cqe_cnt;
	uint32_t *dbrec;   /* consumer index, written by the consumer */
	uint64_t pi;       /* producer index, under lock */
	uint32_t lock;     /* CQE writers: the QP's engine and a peer's (imm) */
	int users;
};

struct softnic_qp {
	softnic *nic;
	softnic_pd *pd;
	uint32_t qpn;
	uint8_t *sq_buf;   /* bb_cnt basic blocks */
	uint32_t bb_cnt;
	uint32_t *dbrec;   /* own cache line */
	uint64_t *db;      /* own cache line */
	softnic_cq *send_cq;
	softnic_cq *recv_cq;
	softnic_qp *peer;  /* under the engine locks of both QPs */
	int connected;
	int peer_gone;
	int engine;        /* index of the engine that executes this QP */

	/* Engine-private progress. */
	uint64_t last_db;  /* doorbell value seen last */
	uint64_t cons;     /* BBs executed */
	uint64_t target;   /* BBs announced by doorbell + doorbell record */
	int in_error;      /* read by softnic_qp_in_error() */
	uint8_t pending_synd; /* doorbell error the next WQE completes with */
	uint8_t pending_vs;
	char error[SOFTNIC_ERR_LEN];
};

typedef struct engine {
	softnic *nic;
	int index;
	pthread_t thread;
	int running;
	pthread_mutex_t lock;  /* held for a pass over qps; taken to add/remove */
	int mgmt_waiting;      /* object calls waiting for lock: engine yields */
	softnic_qp *qps[SOFTNIC_MAX_QP_PER_ENGINE];
	int nqps;
} engine;

struct softnic {
	softnic_attr attr;
	int stop;               /* engines exit when set */
	int nengines;           /* >= 1: with 0 threads, one engine slot is driven by progress() */
	engine *engines;
	pthread_mutex_t lock;   /* object creation/destruction, last_error */
	mr_slot mrs[SOFTNIC_MAX_MR];
	obj_link pds, mrs_list, cqs; /* list heads, under lock */
	uint32_t next_qpn;
	uint32_t next_cqn;
	int next_engine;
	char last_error[SOFTNIC_ERR_LEN];
	softnic_stats stats;    /* updated with relaxed atomics */
};

/* Records a formatted error as the softnic's last error. */
void softnic_set_error(softnic *nic, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Executes what the QP's doorbell announced; returns WQEs executed. The
 * caller holds the QP's engine lock. */
int softnic_qp_progress(softnic_qp *qp);

/* Resolves key in pd for [addr, addr + len) with the access bits need.
 * Returns 0 and the host pointer, or a SOFTNIC_VSYND_* code. */
int softnic_mr_resolve(softnic *nic, softnic_pd *pd, uint32_t key, uint64_t addr,
		       uint64_t len, uint32_t need, uint8_t **ptr);

/* Object calls take an engine's lock through these, so that a busy engine
 * thread lets them in instead of re-taking the lock at once. */
void engine_lock_mgmt(engine *e);
void engine_unlock_mgmt(engine *e);

int softnic_engines_start(softnic *nic);
void softnic_engines_stop(softnic *nic);

static inline void stat_add(uint64_t *counter, uint64_t v)
{
	__atomic_fetch_add(counter, v, __ATOMIC_RELAXED);
}

#endif /* SOFTNIC_INTERNAL_H */
