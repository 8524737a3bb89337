/*
 * gic/mlx5_provider.h - the mlx5 provider: ConnectX through rdma-core
 * (libibverbs + mlx5dv), behind gic/provider.h (gic_provider_mlx5).
 *
 * STATUS: compiled and unit-tested on machines without an RDMA device (the
 * pure parts: device selection on a sysfs tree, attribute and mask
 * builders, views from mlx5dv structures, the registration fallback, the
 * doorbell forwarder against a fake register, the DC WQE bytes; and every
 * entry point's error path with no device). It has never run on ConnectX
 * hardware in this project.
 *
 * Design:
 *  - Device: by name, or the device nearest a GPU on the PCI tree (longest
 *    common sysfs path), with the port checked active.
 *  - Memory registration: host memory with ibv_reg_mr; GPU memory with
 *    DMA-BUF first (cuMemGetHandleForAddressRange + ibv_reg_dmabuf_mr),
 *    then ibv_reg_mr through nvidia-peermem; why DMA-BUF was not used is
 *    kept in the MR (fallback_reason). The CUDA driver is loaded with
 *    dlopen("libcuda.so.1"): nothing here links against CUDA.
 *  - Queues: libmlx5 creates every CQ and QP (so the QP and CQ contexts
 *    are built by rdma-core's code, not by hand); mlx5dv_init_obj gives
 *    their rings, and gic_mlx5_views_from_dv() turns them into the gic_sq /
 *    gic_cq views of gic/post.h. GIC_QUEUES_HOST leaves every ring in host
 *    memory (mapped into the GPU for device views). GIC_QUEUES_GPU puts
 *    the send-queue ring in GPU memory through a parent domain's custom
 *    allocator (MLX5DV_RES_TYPE_QP); CQ rings and doorbell records stay in
 *    host memory.
 *    Why custom allocators and not DEVX umem: libmlx5 writes the CQ ring
 *    (it marks every CQE invalid) and the doorbell records with CPU
 *    stores when it creates them, whatever the allocator, so those must be
 *    CPU-writable; the send ring it leaves untouched when the allocator is
 *    custom, so that one can be plain GPU memory (which the kernel pins
 *    through nvidia-peermem, as for any umem). Putting the CQ and records
 *    in GPU memory too needs DEVX: CREATE_CQ/CREATE_QP and every state
 *    change encoded by hand in PRM layouts (hundreds of bit fields) that
 *    no test without a device could check, where a wrong bit shows only
 *    on a cluster. We keep rdma-core as the author of those commands; the
 *    price, CQ polls and doorbell-record stores that cross PCIe, is named
 *    in README ("Running on a ConnectX cluster").
 *  - Doorbell: the UAR page (mlx5dv_qp.bf.reg) is mapped into the GPU with
 *    cuMemHostRegister(CU_MEMHOSTREGISTER_IOMEMORY); where the driver
 *    refuses (no PeerMappingOverride), device views get a shadow doorbell
 *    word in host memory that a CPU thread (gic_dbfwd) forwards to the
 *    real register: the GPU builds WQEs, the CPU only rings.
 *  - DC: a DCI pool (one send CQ per DCI), a DCT with an SRQ, and the
 *    48-byte address vector taken from an address handle (mlx5dv_ah).
 *  - RC: INIT/RTR/RTS from the two gic_conn records exchanged through a
 *    bootstrap (gic/boot.h).
 *  - Host post path (proxy workers): ibv_post_send with a chain of up to
 *    GIC_POST_MAX_CHAIN work requests.
 *
 * Errors: functions return 0 or a positive errno; constructors return NULL
 * and set errno. What failed (the call, its errno, the likely cause) is
 * written into err where the function takes one, else into the gic_mlx5's
 * base.err (gic_nic_error()).
 */
#ifndef GIC_MLX5_PROVIDER_H
#define GIC_MLX5_PROVIDER_H

#include <stddef.h>
#include <stdint.h>

#include <infiniband/verbs.h>
#include <infiniband/mlx5dv.h>

#include "gic/conn.h"
#include "gic/post.h"
#include "gic/provider.h"

#ifdef __cplusplus
extern "C" {
#endif

/* How device views ring the doorbell. */
enum gic_mlx5_db_mode {
	GIC_MLX5_DB_UNKNOWN = 0,   /* no device view made yet */
	GIC_MLX5_DB_GPU = 1,       /* UAR mapped into the GPU: GPU-initiated */
	GIC_MLX5_DB_FORWARD = 2,   /* shadow word forwarded by a CPU thread */
};

/* How a region was registered. */
enum gic_mlx5_reg_path {
	GIC_MLX5_REG_HOST = 0,     /* host memory, ibv_reg_mr */
	GIC_MLX5_REG_DMABUF = 1,   /* GPU memory, ibv_reg_dmabuf_mr */
	GIC_MLX5_REG_PEERMEM = 2,  /* GPU memory, ibv_reg_mr through nvidia-peermem */
};

typedef struct gic_dbfwd gic_dbfwd;

typedef struct gic_mlx5 {
	gic_nic base;              /* provider header: ops, err */
	struct ibv_context *ctx;
	struct ibv_pd *pd;
	struct ibv_pd *gpu_pd;     /* parent domain allocating send rings in GPU memory */
	struct ibv_port_attr port_attr;
	uint8_t port;
	int gid_index;             /* -1: none (InfiniBand, LID routed) */
	uint8_t gid[16];
	char name[64];
	char fw_ver[64];           /* ibv_query_device's firmware version */
	int emulated;              /* 1: src/emu's device (softnic behind rdma-core), told
				    * by its firmware string; 0: hardware, as far as we know */
	char desc[160];            /* gic_nic_describe()'s line */
	int queues;                /* provider QPs: GIC_QUEUES_* (gic_nic_attr.queues) */
	int db_mode;               /* GIC_MLX5_DB_* */
	char db_reason[256];       /* why the doorbell is forwarded */
	gic_dbfwd *fwd;            /* forwarder thread (GIC_MLX5_DB_FORWARD) */
	uint64_t *shadows;         /* forwarded doorbell words, 64 bytes apart */
	int nshadows;
	struct gic_mlx5_hostreg *regs; /* host ranges mapped into the GPU */
	struct gic_mlx5_gpubuf *gpubufs; /* GPU send rings of the parent domain */
} gic_mlx5;

/* ------------------------------------------------------------------ */
/* Opening a device. */

/* Opens the RDMA device called name (NULL: the first one), checks that it
 * is an mlx5 device whose port is active, and allocates a protection
 * domain. NULL with errno: ENODEV (no RDMA device or RDMA subsystem, or no
 * device of that name), ENOTSUP (not an mlx5 device), ENETDOWN (port not
 * active), or the errno of the failed verbs call. */
gic_mlx5 *gic_mlx5_open(const char *name, uint8_t port, char *err, size_t errlen);

/* Opens the mlx5 device nearest the GPU with PCI bus id gpu_bus_id
 * (gic_mlx5_pick_near on /sys), as gic_mlx5_open does. */
gic_mlx5 *gic_mlx5_open_near(const char *gpu_bus_id, uint8_t port, char *err, size_t errlen);

/* Frees m (and stops its doorbell forwarder); every object made from it
 * must be destroyed first. NULL: no-op. */
void gic_mlx5_close(gic_mlx5 *m);

/* Writes the canonical form "dddd:bb:dd.f" (lowercase hex) of a PCI bus id
 * given as "[domain:]bus:device.function" (any domain width, any case, as
 * CUDA and nvidia-smi print them) into out[13]. EINVAL when malformed. */
int gic_pci_bus_id_normalize(const char *in, char out[13]);

/* Picks the RDMA device nearest the GPU gpu_bus_id under the sysfs tree at
 * sysfs_root ("/sys" on a real system): each
 * <root>/class/infiniband/<dev>/device link resolves to a PCI path, as
 * does <root>/bus/pci/devices/<gpu>; the device sharing the most path
 * components with the GPU wins (same switch beats same root port beats
 * same root complex); ties go to the smaller name. Devices whose link is
 * missing or does not resolve into <root>/devices are skipped (and named
 * in err). Writes the name into name[namelen] and the number of shared
 * PCI components into *shared (may be NULL). EINVAL: bad bus id;
 * ENODEV: GPU not in the tree, or no RDMA device; ENOENT: no device under
 * the GPU's PCI root complex (pass a device name instead). */
int gic_mlx5_pick_near(const char *sysfs_root, const char *gpu_bus_id, char *name,
		       size_t namelen, int *shared, char *err, size_t errlen);

/* ------------------------------------------------------------------ */
/* The CUDA driver, loaded at run time. */

/* Loads the CUDA driver API from libpath (NULL: "libcuda.so.1", or the
 * GIC_LIBCUDA environment variable) and calls cuInit(0), once per
 * process for the default path. 0, or ENOENT ("no CUDA driver": the
 * library or a symbol is missing) or EIO (cuInit failed, e.g. no GPU),
 * with the reason in err. A path other than the default is loaded and
 * released on every call (for tests). */
int gic_mlx5_cuda_probe(const char *libpath, char *err, size_t errlen);

/* ------------------------------------------------------------------ */
/* Memory registration. */

typedef struct gic_mlx5_mr {
	gic_nic_mr base;           /* provider header: addr, len, lkey, rkey */
	struct ibv_mr *mr;
	int path;                  /* GIC_MLX5_REG_* */
	int dmabuf_fd;             /* -1 when none */
	char fallback_reason[256]; /* PEERMEM: why DMA-BUF was not used */
} gic_mlx5_mr;

/* The calls registration makes, as a table, so that the fallback logic
 * runs in tests against simulated failures. gic_mlx5_reg_mr() uses the
 * real ones (CUDA driver and verbs). */
typedef struct gic_mlx5_reg_ops {
	/* 1: GPU memory, 0: host memory (or no CUDA driver: why says so). */
	int (*is_gpu)(void *ctx, const void *addr, char *why, size_t len);
	/* A DMA-BUF fd for the pages holding [addr, addr + len) and the
	 * offset of addr in it; 0, or an errno with why filled. */
	int (*dmabuf_fd)(void *ctx, const void *addr, size_t len, int *fd, uint64_t *offset,
			 char *why, size_t whylen);
	/* ibv_reg_dmabuf_mr / ibv_reg_mr: NULL with errno. */
	struct ibv_mr *(*reg_dmabuf)(void *ctx, uint64_t offset, size_t len, uint64_t iova,
				     int fd, int access);
	struct ibv_mr *(*reg_mr)(void *ctx, void *addr, size_t len, int access);
	void (*close_fd)(void *ctx, int fd);
	void *ctx;
} gic_mlx5_reg_ops;

/* Registers [addr, addr + len) through ops: host memory with reg_mr; GPU
 * memory with DMA-BUF, then reg_mr (peer memory) when any DMA-BUF step
 * fails, keeping that step's reason in out->fallback_reason. On failure
 * err names each step that failed, its errno and the likely cause (no
 * peer memory module, DMA-BUF unsupported by kernel or driver). */
int gic_mlx5_reg_with(const gic_mlx5_reg_ops *ops, void *addr, size_t len, int access,
		      gic_mlx5_mr *out, char *err, size_t errlen);

/* Registers host or GPU memory on m's protection domain (GIC_ACCESS_*
 * rights). NULL with errno; m->base.err says why. */
gic_mlx5_mr *gic_mlx5_reg_mr(gic_mlx5 *m, void *addr, size_t len, int access);
int gic_mlx5_dereg_mr(gic_mlx5_mr *mr);

/* ------------------------------------------------------------------ */
/* Queues. */

typedef struct gic_mlx5_qp gic_mlx5_qp;

typedef struct gic_mlx5_cq {
	gic_nic_cq base;           /* provider header */
	gic_mlx5 *m;
	struct ibv_cq_ex *cq;
	struct mlx5dv_cq dv;
	gic_mlx5_qp *qp;           /* the QP whose send CQ it is (one per CQ), or NULL */
} gic_mlx5_cq;

struct gic_mlx5_qp {
	gic_nic_qp base;           /* provider header: qpn, max_inline */
	gic_mlx5 *m;
	struct ibv_qp *qp;
	struct mlx5dv_qp dv;
	gic_mlx5_cq *cq;
	int queues;                /* GIC_QUEUES_* */
	int is_dci;
	uint32_t psn;
	uint64_t *shadow_db;       /* forwarded doorbell word (in m->shadows) */
	/* Host post path: a chain that does not fit is refused whole (ENOBUFS)
	 * before ibv_post_send, which would post the part that fits. posted
	 * and done count requests; a completion (any status) retires every
	 * request up to its signaled one, whose ends sig_end keeps in order. */
	uint32_t max_send_wr;      /* what libmlx5 granted */
	uint64_t posted, done;
	uint64_t *sig_end;         /* max_send_wr entries */
	uint64_t sig_head, sig_tail;
};

/* A CQ of 2^log_cqe_cnt 64-byte CQEs in host memory. */
gic_mlx5_cq *gic_mlx5_cq_create(gic_mlx5 *m, int log_cqe_cnt);
int gic_mlx5_cq_destroy(gic_mlx5_cq *cq);

/* An RC QP with a send ring of about 2^log_sq_bb BBs (the view says how
 * many), no receive queue, in host memory or with its send ring in GPU
 * memory (queues: GIC_QUEUES_*; GPU needs a current CUDA context on the
 * calling thread and peer memory). */
gic_mlx5_qp *gic_mlx5_rc_qp_create(gic_mlx5 *m, gic_mlx5_cq *cq, int log_sq_bb, int queues);
int gic_mlx5_qp_destroy(gic_mlx5_qp *qp);

/* The QP's half of a connection record: qpn, psn, lid, port, active MTU,
 * and the gid (RoCE, or a global route on InfiniBand). */
int gic_mlx5_qp_local(gic_mlx5_qp *qp, gic_conn_info *out);

/* Moves an RC QP through INIT, RTR and RTS towards the remote record. */
int gic_mlx5_rc_connect(gic_mlx5_qp *qp, const gic_conn_info *local,
			const gic_conn_info *remote);

/* RC QP transitions: fills attr and *mask for the move of a QP to state
 * to (IBV_QPS_INIT, IBV_QPS_RTR or IBV_QPS_RTS), from the local and
 * remote connection records, as ibv_modify_qp() takes them. Pure: no
 * device needed. EINVAL for another state or NULL arguments. */
int gic_rc_transition(enum ibv_qp_state to, const gic_conn_info *local,
		      const gic_conn_info *remote, struct ibv_qp_attr *attr, int *mask);

/* The views of gic/post.h from mlx5dv's description of a QP and its send
 * CQ (pure): wqes = sq.buf, bb_cnt = sq.wqe_cnt, dbrec =
 * &dbrec[MLX5_SND_DBR], db = bf.reg; cqes = cq.buf, cqe_cnt, CQ dbrec.
 * EINVAL when the queue shapes are not what post.h needs (64-byte stride
 * and CQEs, power-of-two counts, a doorbell register). */
int gic_mlx5_views_from_dv(const struct mlx5dv_qp *dq, const struct mlx5dv_cq *dc, uint32_t qpn,
			   uint32_t max_inline, gic_sq *sq, gic_cq *cq);

/* Fills the QP's views for host (GIC_VIEW_HOST: CPU addresses, doorbell
 * to the UAR) or device submitters (GIC_VIEW_DEVICE: GPU addresses of the
 * rings and records, mapped with cuMemHostRegister where in host memory;
 * the doorbell mapped into the GPU, or the shadow word of the forwarder;
 * m->db_mode and m->db_reason say which). */
int gic_mlx5_qp_view(gic_mlx5_qp *qp, int where, gic_sq *sq, gic_cq *cq);

/* ------------------------------------------------------------------ */
/* Host post path (proxy workers). */

/* Builds the ibv_send_wr chain for wr[0..n) into out[n] and sge[n]
 * (linked, last next = NULL). Pure. EINVAL for n out of 1..16, an
 * unknown opcode, or an inline payload above max_inline. */
int gic_mlx5_build_chain(const gic_wr *wr, int n, uint32_t max_inline, struct ibv_send_wr *out,
			 struct ibv_sge *sge);

/* Posts the chain with ibv_post_send (one doorbell). ENOBUFS: the chain
 * does not fit beside the requests not yet known complete (nothing is
 * posted: poll, then post again); EINVAL: the ring is in GPU memory (post
 * from the GPU) or a bad request. */
int gic_mlx5_post(gic_mlx5_qp *qp, const gic_wr *wr, int n);

/* Takes up to max completions with ibv_poll_cq into wc[0..*got) (each
 * retires the host-posted requests up to it); 0, or EINVAL (bad argument)
 * or EIO (ibv_poll_cq failed, e.g. CQ overrun). */
int gic_mlx5_poll(gic_mlx5_cq *cq, gic_wc *wc, int max, int *got);

/* The mlx5 CQE syndrome (GIC_SYND_*) behind a work-completion status; 0
 * for IBV_WC_SUCCESS, 0xff for statuses mlx5 does not report. Pure. */
uint8_t gic_mlx5_wc_syndrome(enum ibv_wc_status status);

/* ------------------------------------------------------------------ */
/* Doorbell forwarder: a CPU thread that rings for GPU-built WQEs. */

typedef struct gic_dbfwd_entry {
	const uint64_t *shadow;    /* doorbell word the GPU stores (host memory) */
	volatile uint64_t *reg;    /* the real doorbell register (UAR) */
	uint64_t last;             /* last value forwarded */
} gic_dbfwd_entry;

/* One pass: for each entry whose shadow changed since its last forward,
 * stores the new value to its register. Returns how many it forwarded.
 * A value equal to the last one is not forwarded: the 16-bit producer
 * index in the value cannot come back to the same number unseen, because
 * the NIC executes nothing until a doorbell is forwarded, so the producer
 * can run at most one ring (<= 2^15 BBs) ahead of the last forward. */
int gic_dbfwd_step(gic_dbfwd_entry *e, int n);

/* Starts a forwarder thread for up to max_entries doorbells, pinned to
 * CPU cpu when cpu >= 0. NULL with errno. */
gic_dbfwd *gic_dbfwd_start(int max_entries, int cpu);

/* Adds a doorbell (safe while the thread runs). ENOSPC when full. */
int gic_dbfwd_add(gic_dbfwd *f, const uint64_t *shadow, void *reg);

/* Doorbells forwarded so far. */
uint64_t gic_dbfwd_count(const gic_dbfwd *f);

/* Stops the thread (waits at most timeout_ns) and frees f. ETIMEDOUT when
 * the thread did not stop in time (f is then leaked, not freed under it). */
int gic_dbfwd_stop(gic_dbfwd *f, uint64_t timeout_ns);

/* ------------------------------------------------------------------ */
/* DC transport. */

/* The DC access key every gic DCT uses (gic_conn records carry no key). */
#define GIC_MLX5_DC_KEY GIC_DC_KEY

enum gic_dc_role {
	GIC_DC_DCI = 0, /* initiator: sends to any DCT */
	GIC_DC_DCT = 1, /* target: receives from any DCI with its key */
};

/* DC QP transitions (pure): DCI INIT (pkey, port), RTR (MTU, port in the
 * address vector), RTS (timeouts, retries, PSN, outstanding atomics); DCT
 * INIT (pkey, port, access), RTR (MTU, address vector, RNR timer); a DCT
 * never goes to RTS (EINVAL). local gives port, MTU and the gid flag. */
int gic_dc_transition(int role, enum ibv_qp_state to, const gic_conn_info *local,
		      struct ibv_qp_attr *attr, int *mask);

/* The 48-byte DC address vector: the bytes of an address handle's
 * mlx5_wqe_av (ah_av, from mlx5dv_ah), with the access key, the DCT
 * number and the extended-AV bit (always: the WQE carries the full 48
 * bytes, GRH or not). Pure. */
void gic_dc_av_from_ah(const void *ah_av, uint32_t dctn, uint64_t dc_key, gic_av_seg *out);

typedef struct gic_mlx5_dct {
	gic_nic_qp base;     /* provider header (type GIC_QP_DCT, qpn the DCT number) */
	gic_mlx5 *m;
	struct ibv_qp *qp;
	struct ibv_srq *srq;
	gic_mlx5_cq *cq;
	uint32_t dctn;
} gic_mlx5_dct;

/* A DCT (key GIC_MLX5_DC_KEY) in RTR, with an SRQ and cq for its
 * receive side; local gives port, MTU and gid. Its number goes to peers
 * as the qpn of a connection record. */
gic_mlx5_dct *gic_mlx5_dct_create(gic_mlx5 *m, gic_mlx5_cq *cq, const gic_conn_info *local);
int gic_mlx5_dct_destroy(gic_mlx5_dct *d);

typedef struct gic_mlx5_dci_pool {
	gic_mlx5 *m;
	int n;
	gic_mlx5_qp **dci;   /* in RTS; dci[i]'s send CQ is cq[i] */
	gic_mlx5_cq **cq;
} gic_mlx5_dci_pool;

/* n DCIs (1..1024), each with its own send CQ of 2^log_cqe_cnt CQEs and a
 * ring of about 2^log_sq_bb BBs, moved to RTS. Which DCI serves which
 * target is the caller's policy (one per warp, or a hash of the target). */
gic_mlx5_dci_pool *gic_mlx5_dci_pool_create(gic_mlx5 *m, int n, int log_sq_bb, int log_cqe_cnt,
					    int queues, const gic_conn_info *local);
void gic_mlx5_dci_pool_destroy(gic_mlx5_dci_pool *p);

/* One DCI on send CQ cq (one QP per CQ), moved to RTS. NULL with errno. */
gic_mlx5_qp *gic_mlx5_dci_create(gic_mlx5 *m, gic_mlx5_cq *cq, int log_sq_bb, int queues);

/* The port's half of a connection record without a QP (qpn 0): lid, port,
 * active MTU and gid, as gic_mlx5_qp_local() fills them. */
void gic_mlx5_port_local(gic_mlx5 *m, gic_conn_info *out);

/* The address vector that reaches the DCT of the remote record (qpn =
 * its DCT number) from m: an address handle is made, its mlx5 AV copied
 * (gic_dc_av_from_ah) and the handle freed. */
int gic_mlx5_dc_av(gic_mlx5 *m, const gic_conn_info *remote_dct, gic_av_seg *out);

/* The 16-byte compact form of that address vector (extended bit clear):
 * ENOTSUP, with the reason in m's error, when the route needs a GRH
 * (RoCE, or a global route), which only the full form carries. */
int gic_mlx5_dc_av_compact(gic_mlx5 *m, const gic_conn_info *remote_dct, gic_av_seg *out);

#ifdef __cplusplus
}
#endif

#endif /* GIC_MLX5_PROVIDER_H */
