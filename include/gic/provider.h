/*
 * gic/provider.h - the NIC provider interface: what mini-gda setup and
 * mini-proxy workers need from a NIC, behind one table of functions.
 *
 * Two providers implement it:
 *  - softnic (gic_provider_softnic, src/nic/softnic_provider.c): the
 *    software NIC of gic/softnic.h; PEs are threads of one process that
 *    share one softnic (gic_nic_attr.share);
 *  - mlx5 (gic_provider_mlx5, src/nic/mlx5/provider.c): ConnectX through
 *    rdma-core; never run on hardware in this project, only on the
 *    emulated device of src/emu (softnic behind rdma-core's API), which
 *    describe() names as such.
 *
 * The queue format is not abstracted: gic_nic_qp_view() fills the gic_sq /
 * gic_cq views of gic/post.h, and the same WQE builders and doorbell code
 * post to either provider. What is abstracted is setup (open, register,
 * create, connect through gic_conn records) and the host post path a proxy
 * worker uses (gic_nic_post: a chain of up to GIC_POST_MAX_CHAIN writes or
 * atomics, usually with the last one signaled; gic_nic_poll: completions).
 *
 * A QP is posted either from the host through gic_nic_post() or through
 * its views (GPU or host threads using gic/post.h), never both: each path
 * keeps its own producer state.
 *
 * Threads: calls on one gic_nic are not thread-safe with each other,
 * except that different QPs/CQs may be posted and polled from different
 * threads (one thread per QP and its CQ). Opening and closing PEs that
 * share a softnic is serialized inside the provider.
 *
 * Errors: functions return 0 or a positive errno; constructors return NULL
 * and set errno. The text of the latest error of a nic (the call that
 * failed, its errno, the likely cause) is gic_nic_error(nic); open() writes
 * it into its err buffer since no nic exists yet.
 */
#ifndef GIC_PROVIDER_H
#define GIC_PROVIDER_H

#include <stddef.h>
#include <stdint.h>

#include "gic/conn.h"
#include "gic/post.h"

#ifdef __cplusplus
extern "C" {
#endif

enum {
	GIC_POST_MAX_CHAIN = 16, /* work requests per gic_nic_post() */
	GIC_NIC_ERR_LEN = 512,
};

/* Access rights of a registered region (values as IBV_ACCESS_*). */
enum gic_access {
	GIC_ACCESS_LOCAL_WRITE = 1,
	GIC_ACCESS_REMOTE_WRITE = 2,
	GIC_ACCESS_REMOTE_READ = 4,
	GIC_ACCESS_REMOTE_ATOMIC = 8,
	GIC_ACCESS_ALL = 15,
};

/* Where the submitter that uses a view runs. */
enum gic_view_where {
	GIC_VIEW_HOST = 0,   /* CPU addresses; doorbell stored by the CPU */
	GIC_VIEW_DEVICE = 1, /* GPU addresses; doorbell stored by the GPU (or forwarded) */
};

/* Where a provider puts send queues (mlx5; softnic uses its allocator). */
enum gic_queue_mem {
	GIC_QUEUES_HOST = 0, /* host memory, mapped into the GPU for device views */
	GIC_QUEUES_GPU = 1,  /* send queue ring in GPU memory (see gic/mlx5_provider.h) */
};

typedef struct gic_nic gic_nic;
typedef struct gic_nic_mr gic_nic_mr;
typedef struct gic_nic_cq gic_nic_cq;
typedef struct gic_nic_qp gic_nic_qp;
typedef struct gic_provider gic_provider;

typedef struct gic_nic_attr {
	/* mlx5 */
	const char *device;   /* RDMA device name; NULL: nearest to gpu_pci, else the first */
	const char *gpu_pci;  /* GPU PCI bus id ("0000:05:00.0"); NULL: none */
	uint8_t port;         /* 0: port 1 */
	int queues;           /* GIC_QUEUES_* */
	/* softnic */
	int engine_threads;   /* CPU engine threads (0: one) */
	int strict;
	gic_nic *share;       /* another softnic PE: use its softnic (NULL: a new one) */
} gic_nic_attr;

/* Work request opcodes of the host post path. */
enum gic_wr_op {
	GIC_WR_WRITE = 0,
	GIC_WR_WRITE_IMM = 1,
	GIC_WR_ATOMIC_FA = 2,
};

typedef struct gic_wr {
	uint64_t wr_id;     /* returned in the completion of a signaled request */
	uint8_t op;         /* GIC_WR_* */
	uint8_t signaled;   /* 1: write a completion */
	uint8_t inline_data;/* writes: copy the payload into the WQE (len <= max inline) */
	uint32_t len;       /* writes: bytes; atomics: ignored (8) */
	uint64_t laddr;     /* source (writes) or where the old value lands (atomics) */
	uint32_t lkey;
	uint64_t raddr;
	uint32_t rkey;
	uint64_t add;       /* ATOMIC_FA: the addend */
	uint32_t imm_be;    /* WRITE_IMM: immediate, big-endian */
} gic_wr;

typedef struct gic_wc {
	uint64_t wr_id;
	uint32_t qpn;
	uint32_t byte_len;
	uint8_t status;          /* 0: success; else the mlx5 syndrome (GIC_SYND_*) */
	uint8_t vendor_syndrome; /* provider detail (softnic: SOFTNIC_VSYND_*) */
} gic_wc;

/* QP types (gic_qp_attr.type). */
enum gic_qp_type {
	GIC_QP_RC = 0,  /* reliable connection: qp_local, then qp_connect on both sides */
	GIC_QP_DCI = 1, /* DC initiator: ready at create (no connect); each WQE names its
			 * target DCT by an address vector (gic_nic_dc_av) */
	GIC_QP_DCT = 2, /* DC target: ready at create, key GIC_DC_KEY; send_cq takes its
			 * receive completions; qp_local gives the record peers make
			 * address vectors from (qpn: the DCT number); no views, no post */
};

/* The DC access key of every DCT a provider makes (connection records
 * carry no key). */
#define GIC_DC_KEY 0x6769632d44430001ull

typedef struct gic_qp_attr {
	gic_nic_cq *send_cq; /* one QP per send CQ (gic_sq.cq); a DCT's receive CQ */
	int log_sq_bb;       /* requested ring of 2^log_sq_bb BBs (1..14); the view
			      * says what the provider made */
	int type;            /* GIC_QP_*; 0: RC */
} gic_qp_attr;

/* ------------------------------------------------------------------ */
/* Objects: each provider's objects start with these headers. */

struct gic_nic {
	const gic_provider *ops;
	char err[GIC_NIC_ERR_LEN];
};

struct gic_nic_mr {
	gic_nic *nic;
	void *addr;
	size_t len;
	uint32_t lkey;
	uint32_t rkey;
};

struct gic_nic_cq {
	gic_nic *nic;
	uint32_t cqe_cnt;
};

struct gic_nic_qp {
	gic_nic *nic;
	uint32_t qpn;
	uint32_t max_inline;
	int type;           /* GIC_QP_* */
};

/* The provider table. Every entry is required. */
struct gic_provider {
	const char *name;
	/* Opens a device (mlx5) or a softnic PE; NULL with errno, and the
	 * reason in err. */
	gic_nic *(*open)(const gic_nic_attr *attr, char *err, size_t errlen);
	/* Frees the nic; every MR, QP and CQ of it must be freed first. */
	void (*close)(gic_nic *nic);
	/* Registers [addr, addr + len) (host or GPU memory) with GIC_ACCESS_*. */
	gic_nic_mr *(*reg_mr)(gic_nic *nic, void *addr, size_t len, int access);
	int (*dereg_mr)(gic_nic_mr *mr);
	/* A CQ of 2^log_cqe_cnt CQE64s. */
	gic_nic_cq *(*cq_create)(gic_nic *nic, int log_cqe_cnt);
	int (*cq_destroy)(gic_nic_cq *cq);
	/* An RC QP, not connected. */
	gic_nic_qp *(*qp_create)(gic_nic *nic, const gic_qp_attr *attr);
	int (*qp_destroy)(gic_nic_qp *qp);
	/* This QP's connection record (qpn, psn, lid, port, mtu, gid); the
	 * caller adds addr and rkey of the region it exposes. */
	int (*qp_local)(gic_nic_qp *qp, gic_conn_info *out);
	/* Connects the QP to the remote record's QP (both sides call it). */
	int (*qp_connect)(gic_nic_qp *qp, const gic_conn_info *local,
			  const gic_conn_info *remote);
	/* Fills the posting views of the QP (GIC_VIEW_*). *cq must outlive *sq. */
	int (*qp_view)(gic_nic_qp *qp, int where, gic_sq *sq, gic_cq *cq);
	/* Posts wr[0..n) (1 <= n <= GIC_POST_MAX_CHAIN) with one doorbell.
	 * ENOBUFS: not enough room in the ring (poll, then post again). */
	int (*post)(gic_nic_qp *qp, const gic_wr *wr, int n);
	/* Takes up to max completions into wc[0..*got); 0 (*got may be 0),
	 * EINVAL for a bad argument, EPROTO for a CQE of another QP, EIO when
	 * the device failed. Error completions are completions (wc.status). */
	int (*poll)(gic_nic_cq *cq, gic_wc *wc, int max, int *got);
	/* The address vector that reaches the DCT of the remote record (qpn:
	 * its DCT number, key GIC_DC_KEY) from a DCI of nic: full 1 the
	 * 48-byte form (two-BB WQEs, any route), full 0 the 16-byte compact
	 * one (one BB; ENOTSUP when the route needs a GRH or the device has
	 * no compact AVs). */
	int (*dc_av)(gic_nic *nic, const gic_conn_info *remote_dct, int full, gic_av_seg *out);
	/* What the provider knows of the QP's failure (softnic: the first
	 * error it recorded; "" when none or nothing is known). */
	const char *(*qp_error)(gic_nic_qp *qp);
	/* One line saying what the nic is: "softnic (CPU engine, 1 thread)",
	 * "mlx5_0 (ConnectX, fw ...)", or the emulated device's name. */
	const char *(*describe)(gic_nic *nic);
};

/* The providers. gic_provider_mlx5 exists when gic_mlx5 is linked. */
extern const gic_provider gic_provider_softnic;
extern const gic_provider gic_provider_mlx5;

/* ------------------------------------------------------------------ */
/* Calls through the table (the object remembers its provider). */

static inline gic_nic *gic_nic_open(const gic_provider *p, const gic_nic_attr *attr, char *err,
				    size_t errlen)
{
	return p->open(attr, err, errlen);
}

static inline void gic_nic_close(gic_nic *nic)
{
	if (nic)
		nic->ops->close(nic);
}

/* Latest error text of calls on nic and its objects ("" when none). */
static inline const char *gic_nic_error(const gic_nic *nic)
{
	return nic ? nic->err : "no nic";
}

static inline gic_nic_mr *gic_nic_reg_mr(gic_nic *nic, void *addr, size_t len, int access)
{
	return nic->ops->reg_mr(nic, addr, len, access);
}

static inline int gic_nic_dereg_mr(gic_nic_mr *mr)
{
	return mr ? mr->nic->ops->dereg_mr(mr) : 0;
}

static inline gic_nic_cq *gic_nic_cq_create(gic_nic *nic, int log_cqe_cnt)
{
	return nic->ops->cq_create(nic, log_cqe_cnt);
}

static inline int gic_nic_cq_destroy(gic_nic_cq *cq)
{
	return cq ? cq->nic->ops->cq_destroy(cq) : 0;
}

static inline gic_nic_qp *gic_nic_qp_create(gic_nic *nic, const gic_qp_attr *attr)
{
	return nic->ops->qp_create(nic, attr);
}

static inline int gic_nic_qp_destroy(gic_nic_qp *qp)
{
	return qp ? qp->nic->ops->qp_destroy(qp) : 0;
}

static inline int gic_nic_qp_local(gic_nic_qp *qp, gic_conn_info *out)
{
	return qp->nic->ops->qp_local(qp, out);
}

static inline int gic_nic_qp_connect(gic_nic_qp *qp, const gic_conn_info *local,
				     const gic_conn_info *remote)
{
	return qp->nic->ops->qp_connect(qp, local, remote);
}

static inline int gic_nic_qp_view(gic_nic_qp *qp, int where, gic_sq *sq, gic_cq *cq)
{
	return qp->nic->ops->qp_view(qp, where, sq, cq);
}

static inline int gic_nic_post(gic_nic_qp *qp, const gic_wr *wr, int n)
{
	return qp->nic->ops->post(qp, wr, n);
}

static inline int gic_nic_poll(gic_nic_cq *cq, gic_wc *wc, int max, int *got)
{
	return cq->nic->ops->poll(cq, wc, max, got);
}

static inline int gic_nic_dc_av(gic_nic *nic, const gic_conn_info *remote_dct, int full,
				gic_av_seg *out)
{
	return nic->ops->dc_av(nic, remote_dct, full, out);
}

static inline const char *gic_nic_qp_error(gic_nic_qp *qp)
{
	return qp ? qp->nic->ops->qp_error(qp) : "";
}

static inline const char *gic_nic_describe(gic_nic *nic)
{
	return nic ? nic->ops->describe(nic) : "no nic";
}

/* A softnic PE over a softnic and protection domain the caller made and
 * keeps (neither is freed by gic_nic_close): for code that builds its
 * softnic itself (a GPU engine, caller-placed queues) and hands it to
 * provider users such as mini-proxy. share: another PE wrapped over the
 * same softnic (their QPs connect to each other), or NULL for the first.
 * NULL with errno (EINVAL: a NULL softnic or pd, share of another
 * softnic). The softnic's object calls are serialized among the PEs that
 * share it, not with the caller's own calls on it. */
typedef struct softnic softnic;
typedef struct softnic_pd softnic_pd;
gic_nic *gic_softnic_pe_wrap(softnic *nic, softnic_pd *pd, gic_nic *share);

#ifdef __cplusplus
}
#endif

#endif /* GIC_PROVIDER_H */
