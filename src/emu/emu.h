/*
 * The emulated rdma-core device (issue 13): internals shared by the files
 * of the replacement libibverbs.so.1. Not a public header.
 *
 * What it is: devices named mlx5_0, mlx5_1, ... whose verbs objects are
 * softnic objects of one softnic per process (CPU engine). What
 * ibv_post_send writes is mlx5 WQEs in the softnic QP's send queue; what
 * ibv_poll_cq reads is the mlx5 CQEs softnic writes. QPs connect to QPs
 * of the same process (by QP number at RTR); across processes: not yet.
 */
#ifndef GIC_EMU_H
#define GIC_EMU_H

#include <infiniband/mlx5dv.h>
#include <infiniband/verbs.h>
#include <pthread.h>

#include "gic/recv.h"
#include "gic/softnic.h"

enum {
	EMU_MAX_DEVICES = 8,
	EMU_QP_TABLE = 4096,   /* QP number -> emu_qp, open addressing */
	EMU_MAX_SGE = 16,
	EMU_MAX_INLINE = 912,  /* 63 segments less ctrl, raddr and the inline header */
	/* Send WRs per QP: softnic's ring of 2^14 BBs holds 16384 one-BB
	 * WQEs (a CX-7: 32768); a QP is refused when its requests at their
	 * largest WQE (bb_per_wr) do not fit the ring, as a device refuses
	 * sizes beyond its queue limit. */
	EMU_MAX_QP_WR = 1 << 14,
	EMU_MAX_LOG_SQ_BB = 14,
};

/* One device: its ibv_device is what ibv_get_device_list hands out. */
typedef struct emu_device {
	struct ibv_device dev;   /* first: applications see this */
	int index;
	uint16_t lid;
	uint64_t guid;
} emu_device;

/* An open device. verbs_context ends with the ibv_context applications
 * hold, so container_of gets back here. */
typedef struct emu_ctx {
	emu_device *edev;
	struct verbs_context vctx; /* last: its ibv_context is the handle */
} emu_ctx;

typedef struct emu_pd {
	struct ibv_pd pd;        /* first */
	softnic_pd *s;
} emu_pd;

/* Queue memory of one object (QP, CQ, SRQ) that its parent domain's
 * allocator handed: the ring (a QP's buffer: its receive ring, then its
 * send ring, as rdma-core's mlx5 lays them out; a CQ's or SRQ's ring) and
 * the doorbell record. NULL: softnic's own. */
typedef struct emu_umem {
	struct ibv_pd *pd;
	uint64_t res_type;   /* the ring's MLX5DV_RES_TYPE_* */
	void *buf;
	void *dbrec;
} emu_umem;

typedef struct emu_cq {
	union {                  /* first: the handles applications hold */
		struct ibv_cq cq;
		struct ibv_cq_ex cqx; /* its first fields are cq's (mlx5dv_create_cq, verbs_cq_ex.c) */
	};
	softnic_cq *s;
	gic_cq view;
	pthread_mutex_t lock;    /* pollers of this CQ */
	int armed;               /* req_notify_cq: the next CQE raises an event */
	uint32_t events_raised;  /* completion events taken by ibv_get_cq_event, not yet acked */
	uint32_t empty_polls;    /* ibv_poll_cq calls that found nothing, in a row */
} emu_cq;

typedef struct emu_srq {
	struct ibv_srq srq;      /* first */
	softnic_srq *s;
	gic_rq view;
	uint64_t *wrid;          /* per WQE slot */
	uint32_t max_sge;
	pthread_mutex_t lock;    /* posters */
	emu_umem umem;           /* ring and record from a parent domain's allocator */
} emu_srq;

typedef struct emu_qp {
	union {                  /* first: the handles applications hold */
		struct ibv_qp qp;
		struct ibv_qp_ex qpx; /* its qp_base is qp */
	};
	softnic_qp *s;
	gic_sq sq;
	gic_cq sq_cq_view;       /* needed by the view; polling goes through emu_cq */
	gic_rq rq;               /* own receive queue (srq NULL) */
	uint64_t *sq_wrid;       /* wr_id of the WQE starting at each BB slot */
	uint64_t *rq_wrid;
	int sq_sig_all;
	struct ibv_qp_cap cap;   /* what creation granted (ibv_query_qp) */
	uint32_t max_inline, max_send_sge, max_recv_sge;
	uint32_t dest_qpn;       /* set at RTR */
	uint16_t dest_lid;
	/* ibv_wr_* (verbs_qpex.c): the WR being built, between wr_start and
	 * wr_complete (sq_lock held), and the first error. */
	struct ibv_send_wr wr;
	struct ibv_sge wr_sge[EMU_MAX_SGE];
	int wr_pending, wr_err;
	uint64_t wr_start_resv;
	pthread_mutex_t sq_lock, rq_lock;
	emu_umem umem;           /* buffer and record from a parent domain's allocator */
	int dct;                 /* a DC target (mlx5dv_create_qp): a softnic DCT, never
				  * connected */
	uint64_t dct_key;        /* its access key */
	/* A DC initiator (mlx5dv_create_qp): a softnic DCI. Its WRs (ibv_wr_*)
	 * need mlx5dv_wr_set_dc_addr as well as their data before they are
	 * written: wr_av is the open WR's address vector. */
	int dci;
	struct mlx5dv_qp_ex dvx; /* mlx5dv_qp_ex_from_ibv_qp_ex */
	struct mlx5_wqe_av wr_av;
	int wr_av_set, wr_data_set;
} emu_qp;

/* The process's emulation: devices, the softnic, the QP table. */
typedef struct emu_global {
	pthread_mutex_t lock;
	int ndev;
	emu_device devs[EMU_MAX_DEVICES];
	struct ibv_device *list[EMU_MAX_DEVICES + 1];
	softnic *nic;            /* opened with the first context */
	int nic_users;
	emu_qp *qps[EMU_QP_TABLE];
	char link_layer;         /* IBV_LINK_LAYER_INFINIBAND or _ETHERNET */
	int poll_yield;          /* an empty ibv_poll_cq yields the CPU every n-th time (0: never) */
	int gpu_engine;          /* 1: softnic's GPU engine runs the queues (verbs_gpu.c) */
} emu_global;

extern emu_global emu;

/* log2 of the smallest power of two holding n entries. */
static inline int log2_ceil(uint32_t n)
{
	int l = 0;

	while ((1u << l) < n)
		l++;
	return l;
}

/* Sets up the devices once (from GIC_EMU_DEVICES, GIC_EMU_LINK). */
void emu_init_devices(void);

/* The context/objects behind the handles applications hold. */
static inline emu_ctx *emu_ctx_of(struct ibv_context *c)
{
	return (emu_ctx *)((char *)c - offsetof(emu_ctx, vctx) - offsetof(struct verbs_context, context));
}

/* QP table (by QP number), under emu.lock. */
void emu_qp_table_add(emu_qp *q);
void emu_qp_table_del(emu_qp *q);
emu_qp *emu_qp_lookup(uint32_t qpn);

/* Connects softnic QP s (numbered qpn, for messages) to the QP numbered
 * dest: one of this process (a verbs QP or a DEVX one, verbs_devx.c; s's
 * own number: loopback) directly, else another process's through
 * softnic's wire. The caller holds emu.lock. 0 (also when a pair of this
 * process is connected already) or an errno, said on stderr. */
int emu_connect_softnic(softnic_qp *s, uint32_t qpn, uint32_t dest);

/* The softnic QP behind the DEVX QP numbered qpn (verbs_devx.c), or NULL;
 * the caller holds emu.lock. */
softnic_qp *emu_devx_qp_lookup(uint32_t qpn);

/* Says once on stderr that name is not implemented (stubs, options). */
void emu_missing(const char *name, const char *what);

/* Context operations (verbs_post.c). */
int emu_post_send(struct ibv_qp *qp, struct ibv_send_wr *wr, struct ibv_send_wr **bad);
int emu_post_recv(struct ibv_qp *qp, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);
int emu_post_srq_recv(struct ibv_srq *srq, struct ibv_recv_wr *wr, struct ibv_recv_wr **bad);
int emu_poll_cq(struct ibv_cq *cq, int n, struct ibv_wc *wc);
int emu_req_notify_cq(struct ibv_cq *cq, int solicited_only);

/* CQs with a completion channel join the event watcher (verbs_events.c);
 * 0 or an errno. */
int emu_events_add(emu_cq *c);
void emu_events_remove(emu_cq *c);

/* Builds one WR at the send queue's next position without ringing
 * (verbs_post.c); the caller holds sq_lock. 0, EINVAL or ENOMEM. */
int emu_post_one(emu_qp *q, const struct ibv_send_wr *wr);

/* Rings the doorbell for what was built since the last ring (verbs_post.c);
 * the caller holds sq_lock. */
void emu_sq_ring(emu_qp *q);

/* Gives qp the ibv_wr_* functions for the send operations in ops
 * (IBV_QP_EX_WITH_*); EOPNOTSUPP for one not implemented (verbs_qpex.c). */
int emu_qpex_setup(emu_qp *q, uint64_t ops);

/* ibv_create_qp_ex as a context op (verbs_qp.c). */
struct ibv_qp *emu_create_qp_ex(struct ibv_context *ctx, struct ibv_qp_init_attr_ex *a);

/* Device queries (verbs_device.c), also context ops. */
int emu_query_port(struct ibv_context *c, uint8_t port, struct ibv_port_attr *a, size_t len);
int emu_query_device_ex(struct ibv_context *c, const struct ibv_query_device_ex_input *in,
			struct ibv_device_attr_ex *a, size_t len);
int emu_get_srq_num(struct ibv_srq *srq, uint32_t *num); /* verbs_objects.c */


/* ------------------------------------------------------------------ */
/* Extended CQs and parent domains (verbs_objects.c, verbs_cq_ex.c). */

/* Every CQ is allocated as one of these: the emu_cq first (the handle),
 * then what the extended polling interface and parent domains need. */
typedef struct emu_cq_ext {
	emu_cq c;                /* first */
	struct ibv_wc cur;       /* the completion start_poll/next_poll took */
	pthread_mutex_t ex_lock; /* held from a start_poll that found one to end_poll */
	struct ibv_pd *parent;   /* IBV_CQ_INIT_ATTR_MASK_PD: held until destroy */
	emu_umem umem;           /* ring and record from the parent's allocator */
} emu_cq_ext;

/* Gives c->c.cqx the extended polling functions (start/next/end_poll and
 * the read_* of every IBV_WC_STANDARD_FLAGS field) (verbs_cq_ex.c). */
void emu_cq_ex_setup(emu_cq_ext *c);

/* ibv_create_cq_ex and ibv_alloc_parent_domain as context ops
 * (verbs_objects.c); NULL with errno. */
struct ibv_cq_ex *emu_create_cq_ex(struct ibv_context *ctx, struct ibv_cq_init_attr_ex *a);
struct ibv_pd *emu_alloc_parent_domain(struct ibv_context *ctx,
				       struct ibv_parent_domain_init_attr *a);

/* Installs the context ops of verbs_objects.c (create_cq_ex,
 * alloc_parent_domain) into v; ctx_set_ops should call it. */
void emu_objects_set_ops(struct verbs_context *v);

/* 1 when pd is a parent domain of the emulation. */
int emu_pd_is_parent(struct ibv_pd *pd);

/* Asks pd's allocator, as rdma-core's mlx5 provider does, for an object's
 * ring (res_type, size bytes, aligned to align) and then its doorbell
 * record (MLX5DV_RES_TYPE_DBR, 8 bytes, aligned to 8). A PD, a parent
 * domain without allocators, or an allocator answering
 * IBV_ALLOCATOR_USE_DEFAULT leaves that buffer NULL (softnic's own). The
 * memory handed is checked: host memory this process reads and writes on
 * every page (and, on the GPU engine, memory the GPU reaches), aligned as
 * softnic needs (SOFTNIC_RING_ALIGN, SOFTNIC_DBREC_ALIGN). 0; ENOMEM when
 * the allocator returns NULL; EFAULT or EINVAL with one stderr line naming
 * what (the buffer given back through free). On failure nothing is held. */
int emu_umem_get(emu_umem *u, struct ibv_pd *pd, uint64_t res_type, size_t size, size_t align,
		 const char *what);

/* Gives u's buffers back through its parent domain's free (each with its
 * resource type) and clears them; buffers that are NULL are skipped. Call
 * after the softnic object using them is destroyed. */
void emu_umem_put(emu_umem *u);

/* A QP, CQ or SRQ made on pd holds it: a parent domain refuses dealloc with
 * EBUSY while held. No-ops for a plain PD (softnic counts its users). */
void emu_pd_hold(struct ibv_pd *pd);
void emu_pd_release(struct ibv_pd *pd);

/* ------------------------------------------------------------------ */
/* softnic's GPU engine behind the emulation (verbs_gpu.c). */

/* Opens the softnic of GIC_EMU_ENGINE=gpu on CUDA device device with
 * warps engine warps; NULL with errno and a stderr line (also when the
 * build has no CUDA). */
softnic *emu_gpu_open(int device, int warps);

/* 0 when the GPU engine reaches [addr, addr + len) at its address (ends
 * checked); EFAULT with a stderr line saying what to do. */
int emu_gpu_region_check(const void *addr, size_t len);

/* The CPU engine's GPU regions (gic/softnic_devmem.h): when [addr, addr +
 * len) starts in device memory of a CUDA GPU, attaches the CUDA part to emu.nic
 * (once, for the first such GPU) and returns 0; else (host memory, no
 * CUDA, a build without it, the part failing: said on stderr) an errno. */
int emu_gpu_devmem_prepare(const void *addr, size_t len);

/* 1 when the GPU engine reaches both ends of [addr, addr + len) at their
 * address; 0 otherwise (also without CUDA). Says nothing. */
int emu_gpu_reaches(const void *addr, size_t len);

#endif /* GIC_EMU_H */
