/*
 * softnic internals: object layout shared by objects.c, execute.c and
 * engine_cpu.c. Not a public header.
 */
#ifndef SOFTNIC_INTERNAL_H
#define SOFTNIC_INTERNAL_H

#include <pthread.h>
#include <stdarg.h>

#include "engine_state.h"

enum {
	SOFTNIC_MAX_QP_PER_ENGINE = SNX_MAX_QP, /* the GPU engine is one engine: all QPs */
	SOFTNIC_ERR_LEN = 256,
	SOFTNIC_CACHELINE = 64,
};

/* Which of an object's queue buffers are caller memory (softnic_qmem),
 * which softnic never frees: bits of softnic_cq/srq/qp.caller_mem. */
enum {
	SOFTNIC_MEM_RING = 1,   /* the send ring, CQE ring or SRQ ring */
	SOFTNIC_MEM_RQ = 2,     /* a QP's own receive ring */
	SOFTNIC_MEM_DBREC = 4,  /* the doorbell record */
	SOFTNIC_MEM_DB = 8,     /* a QP's doorbell register */
};

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
	uint32_t id;
	int users;         /* MRs and QPs */
};

struct softnic_cq {
	obj_link link;     /* first member */
	softnic *nic;
	snx_cq *s;         /* engine state */
	int users;
	uint32_t caller_mem; /* SOFTNIC_MEM_* */
};

struct softnic_srq {
	obj_link link;     /* first member */
	softnic_pd *pd;
	snx_rq *s;         /* engine state */
	int users;         /* QPs */
	uint32_t caller_mem; /* SOFTNIC_MEM_* */
};

struct softnic_qp {
	softnic *nic;
	softnic_pd *pd;
	snx_qp *s;         /* engine state */
	softnic_cq *send_cq;
	softnic_cq *recv_cq;
	softnic_srq *srq;
	uint32_t *dbrec_base; /* [0] receive counter, [1] send counter */
	uint32_t caller_mem;  /* SOFTNIC_MEM_* */
	softnic_qp *peer;
	struct wire_conn *wire; /* connected through the wire (wire.c); NULL: not */
	int gpu_peer;      /* 1 + the other process's softnic it is connected to
			    * (gpu_peer.cu); 0: none */
	int mirror;        /* 1 + its mirror's slot in the export page; 0: none */
	int engine;        /* index of the engine that executes this QP */
	char error[SOFTNIC_ERR_LEN];
};

typedef struct engine {
	softnic *nic;
	int index;
	pthread_t thread;
	int running;
	pthread_mutex_t lock;  /* held for a pass over qps; taken to add/remove */
	int mgmt_waiting;      /* object calls waiting for lock: engine yields */
	softnic_stats stats;   /* this engine's own counters (no sharing) */
	softnic_qp *qps[SOFTNIC_MAX_QP_PER_ENGINE];
	int nqps;
} __attribute__((aligned(SOFTNIC_CACHELINE))) engine;

/* How an engine other than the CPU threads plugs in (the GPU engine):
 * where engine state lives, and what to do at close and for stats. */
typedef struct softnic_backend {
	void *(*state_alloc)(size_t size, void *ctx); /* zeroed */
	void (*state_free)(void *p, void *ctx);
	void (*stop)(softnic *nic, void *ctx);       /* before anything is freed */
	void (*add_stats)(const softnic *nic, softnic_stats *sum, void *ctx);
	int (*progress)(softnic *nic, void *ctx);    /* softnic_progress(); may be NULL */
	void (*release)(void *ctx);                  /* after everything is freed */
	void *ctx;
} softnic_backend;

/* GPU engines of other processes as peers (gpu_peer.cu): what object
 * calls tell that part. Each may be NULL. */
typedef struct softnic_peer_hooks {
	void (*mr_added)(softnic *nic, softnic_mr *mr, void *addr, size_t len); /* slot live */
	void (*mr_gone)(softnic *nic, softnic_mr *mr);  /* before the slot is freed */
	void (*qp_gone)(softnic *nic, softnic_qp *qp);  /* before its state is freed */
	void (*stop)(softnic *nic);    /* at close, once the engine stopped */
	void (*release)(softnic *nic); /* at close, before engine state is freed */
} softnic_peer_hooks;

/* A multi-process softnic's shared-memory arena and peers (shm.c). */
typedef struct softnic_shm softnic_shm;

/* The wire to other processes' softnics and one connection of it (wire.c). */
typedef struct softnic_wire softnic_wire;
typedef struct wire_conn wire_conn;

struct softnic {
	softnic_attr attr;
	softnic_backend backend; /* state_alloc NULL: host memory, CPU engine */
	softnic_shm *shm;        /* NULL: a process-local softnic */
	int nengines;           /* >= 1: with 0 threads, one engine slot is driven by progress() */
	engine *engines;
	snx_shared *shared;     /* MR table, mode, stop flag (engine state) */
	pthread_mutex_t lock;   /* object creation/destruction, last_error */
	obj_link pds, mrs_list, cqs, srqs; /* list heads, under lock */
	uint32_t next_qpn;
	uint32_t qpn_base, qpn_span; /* span > 0: QPNs base + [0, span) (the wire's block) */
	softnic_wire *wire;      /* NULL: no wire (wire.c) */
	const softnic_peer_hooks *peer_hooks; /* NULL: no GPU peers (gpu_peer.cu) */
	struct gpu_peer_part *gpu_peer;
	uint32_t next_cqn;
	uint32_t next_srqn;
	uint32_t next_pd;
	int next_engine;
	char last_error[SOFTNIC_ERR_LEN];
};

#ifdef __cplusplus
extern "C" {
#endif

/* The wait of IB RNR timer code t (0..31), in ns. */
uint64_t softnic_rnr_timer_ns(int t);

/* Adds one engine's counters to sum (relaxed loads: they move). */
void softnic_stats_add(softnic_stats *sum, const softnic_stats *st);

/* Field 22 (start time) of /proc/<pid>/stat, and its state letter in
 * *state; 0 with *state '?' when unreadable (wire.c). */
uint64_t softnic_proc_start(int pid, char *state);

/* Records a formatted error as the softnic's last error. */
void softnic_set_error(softnic *nic, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));


/* Executes what the QP's doorbell announced on the calling CPU thread;
 * returns WQEs executed. The caller holds the QP's engine lock. */
int softnic_qp_progress_cpu(softnic_qp *qp, softnic_stats *st);

/* Object calls take an engine's lock through these, so that a busy engine
 * thread lets them in instead of re-taking the lock at once. */
void engine_lock_mgmt(engine *e);
void engine_unlock_mgmt(engine *e);

/* Opens a softnic whose engine state and engine come from backend (its
 * attr->engine_threads must be 0). */
softnic *softnic_open_backend(const softnic_attr *attr, const softnic_backend *backend);

/* softnic_open_backend with a shared-memory arena: engine state then lives
 * in shm's arena (attr->queue_mem is the arena's allocator). */
softnic *softnic_open_ext(const softnic_attr *attr, const softnic_backend *backend,
			  softnic_shm *shm);

/* shm.c, for objects.c (each is called only when nic->shm is set). */
void *softnic_shm_alloc(softnic_shm *shm, size_t size, size_t align); /* zeroed */
void softnic_shm_free(softnic_shm *shm, void *p);
uint32_t softnic_shm_first_pd(const softnic_shm *shm);  /* job-unique PD ids */
int softnic_shm_check_mr(softnic *nic, const void *addr, size_t len, int access);
void softnic_shm_qp_destroyed(softnic *nic, softnic_qp *qp); /* tells its remote peer */
void softnic_shm_stop(softnic *nic);    /* first in close: watchdog off, header closed */
void softnic_shm_release(softnic_shm *shm); /* last in close: unmaps every arena */

/* engine_gpu.cu: the CUDA device of nic's GPU engine, or -1 (no GPU engine). */
int softnic_gpu_engine_device(const softnic *nic);

int softnic_engines_start(softnic *nic);
void softnic_engines_stop(softnic *nic);


#ifdef __cplusplus
}
#endif

#endif /* SOFTNIC_INTERNAL_H */
