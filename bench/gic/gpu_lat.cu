/*
 * bench/gic/gpu_lat.cu - `gic lat` on the GPU: one operation at a time,
 * one GPU thread per PE (paper Table 3, Table 4, Figure 3a, Figure 4).
 *
 * mini-gda: PE0's thread posts to PE1 through softnic (the engine of
 * --engine), keeping its queue view in registers:
 *   issue           reserve, build, doorbell record, doorbell (SM cycles);
 *   put+completion  issue, then the CQE of that WQE (QP 0 of --qps N); with
 *                   --scope all then a quiet polling the CQ of every other
 *                   configured QP (gic_quiet_all_poll), with all-progress
 *                   one reading their progress words as NVSHMEM 3.8's
 *                   IBGDA quiet does (gic_quiet_all_progress);
 *   rtt             PE0 writes 8 bytes to PE1; PE1's thread (another CTA)
 *                   sees them and writes 8 bytes back; PE0 sees the answer.
 * With 8-byte inline writes and the issue metric, a floor row gives the
 * same stores with no queue logic (the variant's fences included).
 * mini-proxy: a GPU producer per PE, the CPU workers of gic/proxy.h and
 * softnic's CPU engine; the producer polls a host-resident counter.
 *
 * The ordering variant is a template parameter: the paper selects it at
 * build time, and a run-time switch in the posting path would be part of
 * what is timed. Every payload is checked after each run.
 *
 * Inline payloads (Figure 3a, --sweep) come two ways: in registers when the
 * clock starts (gic_wqe_write_inline_regs, the size a template parameter:
 * the paper's mini-gda; rows "gda-inline <order> size=N", payload=registers)
 * or loaded from a staging buffer in GPU memory inside the timed span
 * (gic_wqe_write_inline: the payload-in-memory case; rows
 * "gda-inline-staged <order> size=N", payload=memory).
 *
 * --sweep's pointer rows (Figure 11: gda-pointer, proxy-baseline,
 * proxy-tuned; "<path> [<order>] size=N"): one GPU thread posts a pointer
 * write of N bytes from a source slot to a destination slot (slots reused
 * round-robin over LAT_REGION / GIC_LAT_SWEEP_REGION), waits for its
 * completion (the CQE, or the proxy's counter) and hands the sample to a
 * checker CTA (block 1, LAT_CHECK_THREADS threads), outside the timed
 * span: the checker compares the destination slot with its source and
 * writes the complement back (a write that never lands cannot pass the
 * next check of the slot), then releases the poster.
 *
 * gda-hostdb (--path gda-hostdb): gda-inline's 8-byte write (kind
 * K_HOSTDB) whose poster writes the doorbell record and publishes its
 * position in a progress word of mapped host memory instead of ringing; a
 * pinned host thread rings (hostdb.h). On softnic its fixture keeps PE0's
 * doorbells in mapped host memory (gpu_env_cfg.host_doorbells); on mlx5 the
 * ringer stores to the UAR through the provider's host view
 * (gpu_env_host_doorbell). It first runs the poster-rung write as
 * "gda-hostdb control" (the order gpu_env_post_order() gives).
 *
 * gda-dc, gda-dc-full (--path gda-dc / gda-dc-full): gda-inline's 8-byte
 * write (kinds K_DC, K_DC_FULL) posted on PE0's DCI to PE1's DCT
 * (gpu_env_cfg.dc), the address vector compact (16 bytes, one BB) or full
 * (48 bytes, two BBs), built on the host once and held in registers when
 * the clock starts, as the payload is; the round trip's answer goes from
 * PE1's DCI to PE0's DCT with the same form. They run in the env of the
 * first --qps count, beside that count's RC rows (its DC QPs are created
 * after the RC ones), scope qp.
 */
#include "exp_lat.h"
#include "gpu_common.h"
#include "hostdb.h"
#include "../../tests/gpu/proxy_env.h"
#include "gpu_pair.h"

#include <errno.h>
#include <math.h>
#include <unistd.h>

enum { LAT_REGION = 4 << 20 };

#define DL (gic_now_ns() + ENV_DEADLINE_NS)

static __host__ __device__ uint64_t lat_val(uint64_t i, uint64_t tag)
{
	return (tag << 40) ^ (i * 0x9e3779b97f4a7c15ull) ^ 0x6c6c6c6c00000003ull;
}

static __host__ __device__ uint8_t lat_byte(uint64_t i, uint32_t j)
{
	return (uint8_t)(lat_val(i, 9) >> (8 * (j & 7))) ^ (uint8_t)(j * 29u);
}

/* Payload byte j of sample i of a size-byte payload (what the staging
 * buffer holds and the check expects). */
static __host__ __device__ uint8_t lat_payload_byte(uint64_t i, uint32_t j, uint32_t size)
{
	return size == 8 ? (uint8_t)(lat_val(i, 1) >> (8 * j)) : lat_byte(i, j);
}

/* Chunks of a LEN-byte register payload (at least one, so the array exists). */
#define LAT_CHUNKS(LEN) ((LEN) > 0 ? ((LEN) + 15) / 16 : 1)

/* Sample i's payload of LEN bytes made in registers: word q holds bytes
 * 4q..4q+3 of lat_payload_byte (one 64-bit hash per sample, then one
 * XOR with a constant per word, all before the clock starts). PE0 is
 * thread 0: the XOR with threadIdx.x changes nothing but keeps the words
 * in per-thread registers, as a caller's computed payload is, and not in
 * uniform ones (a one-thread kernel's values are uniform), which would
 * cost one move per word inside the timed span. */
template <int LEN>
static __device__ __forceinline__ void lat_payload_regs(gic_inl16 *p, uint64_t i)
{
	uint64_t h = (LEN == 8 ? lat_val(i, 1) : lat_val(i, 9)) ^ threadIdx.x;

#pragma unroll
	for (uint32_t q = 0; q < LAT_CHUNKS(LEN) * 4; q++) {
		uint32_t k = 0;

#pragma unroll
		for (uint32_t b = 0; b < 4; b++) /* the constant byte pattern */
			k |= (uint32_t)(uint8_t)(LEN == 8 ? 0u : (4 * q + b) * 29u) << (8 * b);
		p[q / 4].w[q % 4] = (uint32_t)(h >> (32 * (q & 1))) ^ k;
	}
}

/* The checker of --sweep's pointer rows (its words in GPU memory). */
typedef struct lat_check {
	uint64_t *ready;     /* the poster: i + 1 once sample i completed; LAT_CHECK_ABORT
			      * when it stops early */
	uint64_t *checked;   /* the checker: i + 1 once sample i's slot was compared and
			      * poisoned */
	uint32_t *bad;       /* [0]: samples whose destination differed; [1]: the first + 1 */
	const uint8_t *src;  /* source slots (PE0) */
	uint8_t *dst;        /* destination slots (PE1) */
	uint32_t size, stride, slots; /* sample i uses slot i % slots */
	int n;
} lat_check;

enum { LAT_CHECK_THREADS = 256 };
#define LAT_CHECK_ABORT (~0ull)

typedef struct gda_cfg {
	int n;              /* samples, warm-up included */
	int pointer;        /* 0: inline from the staging buffer, 1: from src */
	uint32_t size;      /* payload bytes */
	uint32_t stride;    /* destination bytes per sample (>= size, multiple of 8) */
	int rtt;            /* 1: round trips (size 8) */
	int nq;             /* QPs configured; QP 0 is used */
	int scope;          /* GIC_LAT_SCOPE_*: the used QP, or then every other QP */
	uint8_t *dst;       /* PE1's region */
	uint32_t rkey;
	const uint8_t *stage; /* inline payloads, device memory */
	uint8_t *src;       /* pointer payloads, registered in PE0 */
	uint32_t lkey;
	uint8_t *back;      /* PE0's region: round-trip answers */
	uint32_t back_rkey;
	uint64_t delay_ns;  /* timer check: PE1 holds every odd answer this long */
	uint64_t *progress; /* K_HOSTDB: QP 0's progress word (mapped host memory) */
	gic_av_seg av;      /* K_DC, K_DC_FULL: PE0's AV naming PE1's DCT (that form) */
	gic_av_seg back_av; /* K_DC, K_DC_FULL: PE1's AV naming PE0's DCT (round trips) */
	lat_check ck;       /* gda_sweep_kernel: slots and the checker */
} gda_cfg;

typedef struct lat_sample {
	long long issue;    /* cycles */
	long long total;    /* cycles: to the completion or the answer */
	int rc;
	int pad;
} lat_sample;

/* What a sample posts (a template parameter, so that the timed path holds
 * no branch on it): an 8-byte inline value, an inline payload of c.size
 * bytes from the staging buffer, a pointer write of c.size bytes, or an
 * inline payload of LEN bytes held in registers. */
enum { K_INLINE8 = 0, K_INLINE = 1, K_POINTER = 2, K_INLINE_REGS = 3,
       K_HOSTDB = 4, /* K_INLINE8 published to c.progress for a host thread to ring */
       K_DC = 5,     /* K_INLINE8 on a DCI, the compact AV av (one BB) */
       K_DC_FULL = 6 /* K_INLINE8 on a DCI, the full AV av (two BBs) */ };

/* BBs of an 8-byte inline write of KIND (K_INLINE8, K_HOSTDB, K_DC*). */
#define KIND_NBB(KIND) ((KIND) == K_DC_FULL ? 2u : 1u)

/* The 8-byte inline write of KIND at pos: RC, or DC with av. */
template <int KIND>
static __device__ __forceinline__ void gda_write8(gic_sq *s, uint64_t pos, const gic_av_seg *av,
						  uint64_t raddr, uint32_t rkey, uint64_t v)
{
	if (KIND == K_DC)
		gic_wqe_dc_write_inline_u64(s, pos, av, raddr, rkey, v, GIC_CTRL_CQ_UPDATE);
	else if (KIND == K_DC_FULL)
		gic_wqe_dc_write_inline_u64_full(s, pos, av, raddr, rkey, v, GIC_CTRL_CQ_UPDATE);
	else
		gic_wqe_write_inline_u64(s, pos, raddr, rkey, v, GIC_CTRL_CQ_UPDATE);
}

/* Posts sample i on the exclusive local view; returns the rc. */
template <int O, int KIND, int LEN>
static __device__ __forceinline__ int gda_post(gic_sq *s, const gda_cfg &c, int i, uint64_t v,
					      const gic_inl16 *p, const gic_av_seg *av,
					      uint64_t raddr, uint32_t rkey, uint64_t deadline_ns)
{
	uint64_t pos;
	uint32_t nbb = KIND == K_INLINE ? gic_bb_for_ds(gic_ds_inline_write(c.size))
		       : KIND == K_INLINE_REGS ? gic_bb_for_ds(gic_ds_inline_write(LEN))
					       : KIND_NBB(KIND);
	int rc = gic_sq_reserve_excl(s, nbb, &pos, O, deadline_ns);

	if (rc)
		return rc;
	if (KIND == K_INLINE_REGS)
		gic_wqe_write_inline_regs(s, pos, raddr, rkey, p, LEN, GIC_CTRL_CQ_UPDATE);
	else if (KIND == K_POINTER)
		gic_wqe_write(s, pos, GIC_OPCODE_RDMA_WRITE, raddr, rkey,
			      (uint64_t)(c.src + (uint64_t)i * c.stride), c.lkey, c.size,
			      GIC_CTRL_CQ_UPDATE, 0);
	else if (KIND == K_INLINE8 || KIND == K_HOSTDB || KIND == K_DC || KIND == K_DC_FULL)
		gda_write8<KIND>(s, pos, av, raddr, rkey, v);
	else
		gic_wqe_write_inline(s, pos, raddr, rkey, c.stage + (uint64_t)i * c.stride, c.size,
				     GIC_CTRL_CQ_UPDATE);
	gic_sq_note_signaled(s, pos + nbb, 0);
	if (KIND == K_HOSTDB)
		gic_hostdb_publish(s, c.progress);
	else
		gic_sq_publish_excl(s, O);
	return 0;
}

/* PE0: the measured side. */
template <int O, int KIND, int LEN>
static __device__ void gda_pe0(gic_sq *g, const gda_cfg &c, lat_sample *out)
{
	gic_sq s;
	gic_cq cq;
	/* K_DC*: the AV's words (4 compact, 12 full), copied once; pinned in
	 * registers before each clock start below. */
	uint32_t avw[12] GIC_ALIGN16;

	long long c1 = 0;

	if (KIND == K_DC || KIND == K_DC_FULL)
		__builtin_memcpy(avw, &c.av, sizeof(avw));
	gic_sq_local_begin(&s, &cq, g);
	for (int i = 0; i < c.n; i++) {
		/* Inputs are made before the clock starts and after the last
		 * sample's clock stopped (gpu_after_clock): the payload, the
		 * address, the key, and the deadline (a globaltimer read, a
		 * guard that is not part of posting; the proxy rows do the
		 * same). */
		int k = gpu_after_clock(i, c1);
		uint64_t v = lat_val(k, 1), raddr = (uint64_t)(c.dst + (uint64_t)k * c.stride);
		uint64_t deadline = DL;
		uint32_t rkey = c.rkey + (uint32_t)(k - i);

		gic_inl16 p[LAT_CHUNKS(LEN)];

		if (KIND == K_INLINE_REGS) {
			/* The payload, in registers before the clock starts. */
			lat_payload_regs<LEN>(p, (uint64_t)k);
#pragma unroll
			for (int j = 0; j < LAT_CHUNKS(LEN); j++)
				asm volatile("" : "+r"(p[j].w[0]), "+r"(p[j].w[1]), "+r"(p[j].w[2]),
					     "+r"(p[j].w[3]));
		}
		if (KIND == K_DC || KIND == K_DC_FULL) {
			/* The AV, in registers before the clock starts (constant
			 * per target: the poster holds it as it holds the rkey). */
#pragma unroll
			for (int j = 0; j < (KIND == K_DC_FULL ? 12 : 4); j += 4)
				asm volatile("" : "+r"(avw[j]), "+r"(avw[j + 1]), "+r"(avw[j + 2]),
					     "+r"(avw[j + 3]));
		}
		asm volatile("" : "+l"(v), "+l"(raddr), "+l"(deadline), "+r"(rkey));
		long long c0 = clock64();
		int rc = gda_post<O, KIND, LEN>(&s, c, i, v, p, (const gic_av_seg *)avw, raddr, rkey,
						deadline);
		c1 = clock64();

		if (!rc && c.rtt)
			rc = gpu_wait_word((const uint64_t *)(c.back + (uint64_t)i * 8), ~lat_val(i, 1));
		if (!rc && !c.rtt)
			rc = gic_sq_wait_retired(&s, s.ready, 0, O, DL);
		/* The PE-wide quiets walk the other QPs' global views (QP 0's
		 * is in registers and retired above). */
		if (!rc && !c.rtt && c.scope == GIC_LAT_SCOPE_ALL)
			rc = gic_quiet_all_poll(g + 1, c.nq - 1, O, DL);
		if (!rc && !c.rtt && c.scope == GIC_LAT_SCOPE_PROGRESS)
			rc = gic_quiet_all_progress(g + 1, c.nq - 1, O, DL);
		out[i].total = clock64() - c0;
		out[i].issue = c1 - c0;
		if (!rc && c.rtt) /* retire the write outside the timed span */
			rc = gic_sq_wait_retired(&s, s.ready, 0, O, DL);
		out[i].rc = rc;
		if (rc && rc != EIO)
			break;
	}
	gic_sq_local_end(g, &s);
}

/* PE1 (round trips): waits for each request and answers it; with DELAY
 * (the timer check), every odd answer after c.delay_ns of spinning on
 * %globaltimer, a clock of its own (PE0 times with clock64). KIND K_DC*:
 * the answer from PE1's DCI (g) to PE0's DCT, the AV form of the request;
 * else gda-inline's RC write. */
template <int O, int DELAY, int KIND>
static __device__ void gda_pe1(gic_sq *g, const gda_cfg &c)
{
	gic_sq s;
	gic_cq cq;
	gic_av_seg bav = c.back_av; /* once, as PE0 holds its AV */
	const uint32_t nbb = KIND == K_DC || KIND == K_DC_FULL ? KIND_NBB(KIND) : 1;

	gic_sq_local_begin(&s, &cq, g);
	for (int i = 0; i < c.n; i++) {
		uint64_t pos;
		int rc = gpu_wait_word((const uint64_t *)(c.dst + (uint64_t)i * c.stride), lat_val(i, 1));

		if (DELAY && !rc && (i & 1)) { /* ends by itself */
			uint64_t t0 = gic_now_ns();

			while (gic_now_ns() - t0 < c.delay_ns)
				;
		}
		if (!rc)
			rc = gic_sq_reserve_excl(&s, nbb, &pos, O, DL);
		if (rc)
			break;
		gda_write8<KIND == K_DC || KIND == K_DC_FULL ? KIND : K_INLINE8>(
			&s, pos, &bav, (uint64_t)(c.back + (uint64_t)i * 8), c.back_rkey,
			~lat_val(i, 1));
		gic_sq_note_signaled(&s, pos + nbb, 0);
		gic_sq_publish_excl(&s, O);
		if (gic_sq_wait_retired(&s, s.ready, 0, O, DL))
			break;
	}
	gic_sq_local_end(g, &s);
}

template <int O, int KIND, int LEN>
__global__ void gda_lat_kernel(gic_sq *pe0, gic_sq *pe1, gda_cfg c, lat_sample *out)
{
	if (blockIdx.x == 0)
		gda_pe0<O, KIND, LEN>(pe0, c, out);
	else
		gda_pe1<O, 0, KIND>(pe1, c);
}

/* The timer check: round trips whose odd answers PE1 delays. */
template <int O>
__global__ void gda_timer_kernel(gic_sq *pe0, gic_sq *pe1, gda_cfg c, lat_sample *out)
{
	if (blockIdx.x == 0)
		gda_pe0<O, K_INLINE8, 0>(pe0, c, out);
	else
		gda_pe1<O, 1, K_INLINE8>(pe1, c);
}

/* The floor: three 16-byte stores and the variant's doorbell sequence into
 * scratch memory of the queue's placement, no reservation or index logic. */
template <int O>
__global__ void gda_floor_kernel(gic_sq *g, int n, lat_sample *out)
{
	gic_sq s = *g;
	long long c1 = 0;

	for (int i = 0; i < n; i++) {
		int k = gpu_after_clock(i, c1); /* as gda_pe0 makes its inputs */
		uint4 seg = make_uint4(k, 1, 2, 3);
		uint8_t *w = s.wqes + (k & (s.bb_cnt - 1)) * 64;
		long long c0 = clock64();

		gic_st_seg16(w, &seg);
		gic_st_seg16(w + 16, &seg);
		gic_st_seg16(w + 32, &seg);
		gic_sq_ring(&s, (uint64_t)i + 1, O);
		c1 = clock64();
		out[i].issue = out[i].total = c1 - c0;
		out[i].rc = 0;
	}
}

/* ------------------------------------------------------------------ */
/* --sweep's pointer rows: the poster's hand-off and the checker CTA. */

/* The poster, after sample i completed (outside the timed span): hands it
 * to the checker and waits until its slot was checked. 0 or ETIMEDOUT. */
static __device__ __forceinline__ int lat_check_handoff(const lat_check &k, int i)
{
	gic_st_release_sys_u64(k.ready, (uint64_t)i + 1);
	return gpu_wait_word(k.checked, (uint64_t)i + 1);
}

/* The checker CTA: for each sample, once the poster released it, every
 * thread compares its share of the destination slot with the source slot
 * (volatile: past L1, which may hold the slot's previous check) and
 * stores the complement; then a system-scope fence, so that the poison is
 * in memory before the poster's next post, which the checked word
 * releases. Returns when the poster stops or does not release in time. */
static __device__ void lat_checker(const lat_check &k)
{
	__shared__ int go, differs;

	for (int i = 0; i < k.n; i++) {
		if (threadIdx.x == 0) {
			uint64_t deadline = gic_now_ns() + ENV_DEADLINE_NS, r;

			while ((r = gic_ld_acquire_sys_u64(k.ready)) < (uint64_t)i + 1 &&
			       gic_now_ns() < deadline)
				__nanosleep(256);
			go = r == (uint64_t)i + 1;
			differs = 0;
		}
		__syncthreads();
		if (!go)
			return;
		size_t off = (size_t)((uint32_t)i % k.slots) * k.stride;
		const volatile uint64_t *sw = (const volatile uint64_t *)(k.src + off);
		volatile uint64_t *dw = (volatile uint64_t *)(k.dst + off);
		const volatile uint8_t *sb = k.src + off;
		volatile uint8_t *db = k.dst + off;
		uint32_t words = k.size / 8, bad = 0;

		for (uint32_t w = threadIdx.x; w < words; w += blockDim.x) {
			uint64_t want = sw[w];

			bad |= dw[w] != want;
			dw[w] = ~want;
		}
		for (uint32_t j = words * 8 + threadIdx.x; j < k.size; j += blockDim.x) {
			uint8_t want = sb[j];

			bad |= db[j] != want;
			db[j] = (uint8_t)~want;
		}
		if (bad)
			atomicOr(&differs, 1);
		__threadfence_system();
		__syncthreads();
		if (threadIdx.x == 0) {
			if (differs && !k.bad[0]++)
				k.bad[1] = (uint32_t)i + 1;
			gic_st_release_sys_u64(k.checked, (uint64_t)i + 1);
		}
	}
}

/* PE0's pointer writes of c.size bytes, slot i % c.ck.slots, each
 * completed (c.scope as gda_pe0) and then checked. */
template <int O>
static __device__ void gda_sweep_pe0(gic_sq *g, const gda_cfg &c, lat_sample *out)
{
	gic_sq s;
	gic_cq cq;
	gic_inl16 p[1]; /* no inline payload */
	long long c1 = 0;

	gic_sq_local_begin(&s, &cq, g);
	for (int i = 0; i < c.n; i++) {
		int k = gpu_after_clock(i, c1); /* inputs after the last clock, as gda_pe0 */
		uint32_t slot = (uint32_t)k % c.ck.slots;
		uint64_t raddr = (uint64_t)(c.dst + (uint64_t)slot * c.stride), deadline = DL, v = 0;
		uint32_t rkey = c.rkey + (uint32_t)(k - i);

		asm volatile("" : "+l"(v), "+l"(raddr), "+l"(deadline), "+r"(rkey));
		long long c0 = clock64();
		int rc = gda_post<O, K_POINTER, 0>(&s, c, (int)slot, v, p, NULL, raddr, rkey, deadline);
		c1 = clock64();

		if (!rc)
			rc = gic_sq_wait_retired(&s, s.ready, 0, O, DL);
		if (!rc && c.scope == GIC_LAT_SCOPE_ALL)
			rc = gic_quiet_all_poll(g + 1, c.nq - 1, O, DL);
		if (!rc && c.scope == GIC_LAT_SCOPE_PROGRESS)
			rc = gic_quiet_all_progress(g + 1, c.nq - 1, O, DL);
		out[i].total = clock64() - c0;
		out[i].issue = c1 - c0;
		if (!rc)
			rc = lat_check_handoff(c.ck, i);
		out[i].rc = rc;
		if (rc) {
			gic_st_release_sys_u64(c.ck.ready, LAT_CHECK_ABORT);
			break;
		}
	}
	gic_sq_local_end(g, &s);
}

/* Block 0's thread 0 posts (its other threads leave at once), block 1
 * checks. */
template <int O>
__global__ void gda_sweep_kernel(gic_sq *pe0, gda_cfg c, lat_sample *out)
{
	if (blockIdx.x == 1)
		lat_checker(c.ck);
	else if (threadIdx.x == 0)
		gda_sweep_pe0<O>(pe0, c, out);
}

typedef void (*gda_kernel_fn)(gic_sq *, gic_sq *, gda_cfg, lat_sample *);
typedef void (*sweep_kernel_fn)(gic_sq *, gda_cfg, lat_sample *);
static const sweep_kernel_fn sweep_kernels[GIC_LAT_ORDERS] = {
	gda_sweep_kernel<0>, gda_sweep_kernel<1>, gda_sweep_kernel<2>, gda_sweep_kernel<3>,
	gda_sweep_kernel<4>, gda_sweep_kernel<5>, gda_sweep_kernel<6>, gda_sweep_kernel<7>,
};
typedef void (*floor_kernel_fn)(gic_sq *, int, lat_sample *);
#define GDA_KINDS(O) { gda_lat_kernel<O, K_INLINE8, 0>, gda_lat_kernel<O, K_INLINE, 0>, \
			  gda_lat_kernel<O, K_POINTER, 0> }
static const gda_kernel_fn gda_kernels[GIC_LAT_ORDERS][3] = {
	GDA_KINDS(0), GDA_KINDS(1), GDA_KINDS(2), GDA_KINDS(3), GDA_KINDS(4), GDA_KINDS(5),
	GDA_KINDS(6), GDA_KINDS(7),
};
/* The sizes built with the payload in registers (a kernel each, per
 * order): Figure 3a's 8 .. 512 by 2, with 12 (the largest payload of one
 * segment after the header) and 48 (the largest of one BB is 44). */
static const uint32_t regs_sizes[] = { 8, 12, 16, 32, 48, 64, 128, 256, 512 };
enum { REGS_SIZES = sizeof(regs_sizes) / sizeof(regs_sizes[0]) };
#define GDA_REGS(O) { gda_lat_kernel<O, K_INLINE_REGS, 8>, gda_lat_kernel<O, K_INLINE_REGS, 12>, \
	gda_lat_kernel<O, K_INLINE_REGS, 16>, gda_lat_kernel<O, K_INLINE_REGS, 32>, \
	gda_lat_kernel<O, K_INLINE_REGS, 48>, gda_lat_kernel<O, K_INLINE_REGS, 64>, \
	gda_lat_kernel<O, K_INLINE_REGS, 128>, gda_lat_kernel<O, K_INLINE_REGS, 256>, \
	gda_lat_kernel<O, K_INLINE_REGS, 512> }
static const gda_kernel_fn regs_kernels[GIC_LAT_ORDERS][REGS_SIZES] = {
	GDA_REGS(0), GDA_REGS(1), GDA_REGS(2), GDA_REGS(3), GDA_REGS(4), GDA_REGS(5), GDA_REGS(6),
	GDA_REGS(7),
};

/* The register kernel of size, or NULL when that size is not built. */
static gda_kernel_fn regs_kernel(int order, uint32_t size)
{
	for (int i = 0; i < REGS_SIZES; i++)
		if (regs_sizes[i] == size)
			return regs_kernels[order][i];
	return NULL;
}
/* gda-dc, gda-dc-full: [order][full]. */
#define GDA_DC(O) { gda_lat_kernel<O, K_DC, 0>, gda_lat_kernel<O, K_DC_FULL, 0> }
static const gda_kernel_fn dc_kernels[GIC_LAT_ORDERS][2] = {
	GDA_DC(0), GDA_DC(1), GDA_DC(2), GDA_DC(3), GDA_DC(4), GDA_DC(5), GDA_DC(6), GDA_DC(7),
};
/* gda-hostdb: the host rings; completions polled as gda-inline fence-gpu. */
static const gda_kernel_fn hostdb_kernel = gda_lat_kernel<GIC_ORDER_FENCE_GPU, K_HOSTDB, 0>;
static const gda_kernel_fn timer_kernels[GIC_LAT_ORDERS] = {
	gda_timer_kernel<0>, gda_timer_kernel<1>, gda_timer_kernel<2>, gda_timer_kernel<3>,
	gda_timer_kernel<4>, gda_timer_kernel<5>, gda_timer_kernel<6>, gda_timer_kernel<7>,
};
static const floor_kernel_fn floor_kernels[GIC_LAT_ORDERS] = {
	gda_floor_kernel<0>, gda_floor_kernel<1>, gda_floor_kernel<2>, gda_floor_kernel<3>,
	gda_floor_kernel<4>, gda_floor_kernel<5>, gda_floor_kernel<6>, gda_floor_kernel<7>,
};

/* ------------------------------------------------------------------ */
/* Host side. */

typedef struct lat_run {
	const gic_opts *o;
	const gic_run_info *info;
	gic_sink *sink;
	gpu_env e;
	uint8_t *stage;       /* device memory: inline payloads */
	void *scratch_mem;    /* the floor's queue-shaped scratch */
	gic_sq *scratch;
	lat_sample *d, *h;
	double *v;
	int n;                /* samples per measurement, warm-up included */
	int failed;
	int invalid;          /* rows emitted with a failed validation (gda_after_row) */
	int first_count;      /* 1 while the first --qps count runs */
	int used;             /* the QP run_samples names on an error (0, or ENV_QP_DCI0) */
	uint64_t *ckw;        /* GPU memory: the checker's words (lat_check) */
	size_t sizes[2][GIC_LAT_SWEEP_MAX_SIZES]; /* --sweep: inline, pointer sizes */
	int nsizes[2];
} lat_run;

/* The checker of a pointer sweep from src to dst (region bytes each):
 * 64-byte slots, as many as the region holds, at most one per sample. */
static lat_check sweep_check(lat_run *L, const uint8_t *src, uint8_t *dst, size_t region,
			     uint32_t size)
{
	lat_check k;
	size_t slots;

	memset(&k, 0, sizeof(k));
	k.ready = L->ckw;
	k.checked = L->ckw + 16;
	k.bad = (uint32_t *)(L->ckw + 32);
	k.src = src;
	k.dst = dst;
	k.size = size;
	k.stride = (size + 63) & ~63u;
	slots = region / k.stride;
	k.slots = (uint32_t)(slots < (size_t)L->n ? slots : (size_t)L->n);
	k.n = L->n;
	return k;
}

/* Host image of a pointer sweep's slots: the source's pattern, or (poison
 * 1) its complement for the destination; malloc'd, NULL without memory. */
static uint8_t *sweep_image(const lat_check *k, int poison)
{
	size_t bytes = (size_t)k->slots * k->stride;
	uint8_t *h = (uint8_t *)malloc(bytes);

	for (size_t b = 0; h && b < bytes; b++)
		h[b] = lat_byte(b / k->stride, (uint32_t)(b % k->stride)) ^ (poison ? 0xff : 0);
	return h;
}

/* The checker's words and the samples, cleared on stream (as
 * clear_samples). */
static void sweep_clear(lat_run *L, cudaStream_t stream)
{
	cudaMemsetAsync(L->ckw, 0, 64 * sizeof(uint64_t), stream);
	cudaMemsetAsync(L->d, 0xff, sizeof(lat_sample) * L->n, stream);
}

/* 1 when the checker found every transfer's destination as its source
 * (bad: the checker's words, read back); else 0 after a message. */
static int sweep_valid(const char *name, const uint32_t *bad)
{
	if (bad[0])
		fprintf(stderr, "gic lat: %s: %u transfer(s) left a destination unlike its source "
			"(first: sample %u)\n", name, bad[0], bad[1] - 1);
	return bad[0] == 0;
}

/* Fills the staging buffer and PE0's source with the payload pattern, and
 * clears the destination and answer regions. */
static int prepare_payloads(lat_run *L, uint32_t size, uint32_t stride)
{
	size_t bytes = (size_t)L->n * stride;
	uint8_t *h = (uint8_t *)calloc(1, bytes);
	int rc;

	if (!h)
		return ENOMEM;
	for (int i = 0; i < L->n; i++)
		for (uint32_t j = 0; j < size; j++)
			h[(size_t)i * stride + j] = lat_payload_byte((uint64_t)i, j, size);
	rc = gpu_env_write(&L->e, L->stage, h, bytes) || gpu_env_write(&L->e, L->e.src, h, bytes);
	memset(h, 0, bytes);
	rc = rc || gpu_env_write(&L->e, L->e.dst, h, bytes) ||
	     gpu_env_write(&L->e, L->e.back, h, (size_t)L->n * 8);
	free(h);
	return rc ? EIO : 0;
}

/* Checks what PE1 received (and PE0's answers for round trips). */
static int validate(lat_run *L, const gda_cfg *c)
{
	size_t bytes = (size_t)L->n * c->stride;
	uint8_t *h = (uint8_t *)malloc(bytes);
	uint64_t *b = (uint64_t *)malloc((size_t)L->n * 8);
	int ok = h && b && !gpu_env_read(&L->e, h, L->e.dst, bytes) &&
		 !gpu_env_read(&L->e, b, L->e.back, (size_t)L->n * 8);

	for (int i = 0; i < L->n && ok; i++) {
		for (uint32_t j = 0; j < c->size && ok; j++)
			ok = h[(size_t)i * c->stride + j] == lat_payload_byte((uint64_t)i, j, c->size);
		if (ok && c->rtt)
			ok = b[i] == ~lat_val(i, 1);
		if (!ok)
			fprintf(stderr, "gic lat: sample %d: payload %s\n", i,
				c->rtt ? "or answer wrong" : "wrong");
	}
	free(h);
	free(b);
	return ok;
}

/* Runs one kernel of n samples; 0, or the number of failed samples
 * (negative when the kernel did not finish). */
static int run_samples(lat_run *L, const char *what)
{
	int bad = 0;

	if (cudaGetLastError() != cudaSuccess || gpu_env_wait(&L->e, what, 120))
		return -1;
	if (gpu_env_read(&L->e, L->h, L->d, sizeof(lat_sample) * L->n))
		return -1;
	for (int i = 0; i < L->n; i++)
		if (L->h[i].rc && !bad++)
			fprintf(stderr, "gic lat: %s: sample %d: error %d (%s)\n", what, i, L->h[i].rc,
				gpu_env_qp_error(&L->e, L->used));
	return bad;
}

/* Marks every sample unwritten (rc -1) before a kernel fills them, so
 * that a kernel that stops early leaves no stale samples behind. */
static void clear_samples(lat_run *L, cudaStream_t stream)
{
	cudaMemsetAsync(L->d, 0xff, sizeof(lat_sample) * L->n, stream);
}

/* Emits the samples' issue or total times (those written before any
 * early stop); gpu_engine says which softnic
 * engine carried them (the proxy paths run the CPU engine). */
static void emit_cycles(lat_run *L, const char *name, const char *metric, int total, int valid,
			const char *params, const char *note, int gpu_engine)
{
	gic_result r;
	int m = 0;

	gic_result_init(&r, "lat", name, metric, "us");
	for (int i = 0; i < L->n; i++) {
		if (L->h[i].rc == -1) /* never written: the kernel stopped before it */
			break;
		L->v[m++] = (double)(total ? L->h[i].total : L->h[i].issue) / L->info->sm_mhz;
	}
	snprintf(r.params, sizeof(r.params), "%s", params);
	snprintf(r.note, sizeof(r.note), "%s", note);
	gpu_result_transport(&r, L->o, gpu_engine);
	if (gpu_engine) /* a mini-gda row: the engine of L->e (--engine-sms) */
		gpu_result_placement(&r, &L->e);
	r.validated = valid && m == L->n;
	gpu_samples_emit(L->sink, &r, L->v, m, L->o->warmup);
}

/* Median of the last run's issue times (total: its put+completion
 * times), us, warm-up dropped. */
static double run_p50(lat_run *L, int total)
{
	gic_samples v;
	gic_summary sm;

	gic_samples_init(&v, (size_t)L->n);
	for (int i = 0; i < L->n; i++)
		gic_samples_add(&v, (double)(total ? L->h[i].total : L->h[i].issue) /
					    L->info->sm_mhz);
	gic_summarize(&v, (size_t)L->o->warmup, &sm);
	gic_samples_free(&v);
	return sm.p50;
}


/* The floor of one ordering variant: its p50 (us), and, when emit, its
 * row; -1 when it could not run. */
static double floor_of(lat_run *L, int order, const char *name, const char *params, int emit)
{
	char fname[144];
	double p50;

	clear_samples(L, L->e.stream);
	floor_kernels[order]<<<1, 1, 0, L->e.stream>>>(L->scratch, L->n, L->d);
	snprintf(fname, sizeof(fname), "%s floor", name);
	if (run_samples(L, fname) != 0)
		return -1;
	p50 = run_p50(L, 0);
	if (emit)
		emit_cycles(L, fname, "issue", 0, 1, params,
			    "the same stores and fences into scratch, no queue logic (no payload)",
			    L->o->gpu_engine);
	return p50;
}

/* The configuration of one mini-gda kernel. */
static void gda_cfg_fill(lat_run *L, gda_cfg *c, int pointer, uint32_t size, int nq, int scope)
{
	memset(c, 0, sizeof(*c));
	c->n = L->n;
	c->pointer = pointer;
	c->size = size;
	c->stride = (size + 7) & ~7u;
	c->nq = nq;
	c->scope = scope;
	c->dst = L->e.dst;
	c->rkey = L->e.dst_rkey;
	c->stage = L->stage;
	c->src = L->e.src;
	c->lkey = L->e.src_lkey;
	c->back = L->e.back;
	c->back_rkey = L->e.back_rkey;
}

/* The timer check (exp_lat.h): one kernel of round trips, every odd
 * answer delayed by D; the row from the samples after the warm-up. */
static void gda_timer(lat_run *L, const lat_state *st)
{
	int order = gic_lat_timer_order(st), bad;
	gic_samples plain, delayed;
	char params[128];
	gda_cfg c;

	gda_cfg_fill(L, &c, 0, 8, L->e.cfg.nqps, GIC_LAT_SCOPE_QP);
	c.rtt = 1;
	c.delay_ns = (uint64_t)st->timer_delay_us * 1000;
	if (prepare_payloads(L, 8, c.stride)) {
		L->failed++;
		return;
	}
	clear_samples(L, L->e.stream);
	timer_kernels[order]<<<2, 1, 0, L->e.stream>>>(L->e.d_sq, L->e.d_peer_sq, c, L->d);
	bad = run_samples(L, "timer check");
	if (bad < 0) {
		L->failed++;
		return;
	}
	gic_samples_init(&plain, (size_t)L->n);
	gic_samples_init(&delayed, (size_t)L->n);
	for (int i = L->o->warmup; i < L->n; i++)
		if (L->h[i].rc == 0)
			gic_samples_add(i & 1 ? &delayed : &plain,
					(double)L->h[i].total / L->info->sm_mhz);
	snprintf(params, sizeof(params), "size=8 qps=%d order=%s timer=globaltimer", L->e.cfg.nqps,
		 gic_lat_order_name(order));
	if (!plain.n || !delayed.n) {
		fprintf(stderr, "gic lat: timer check: no samples of each kind after the warm-up\n");
		L->failed++;
	} else if (gic_lat_timer_emit(L->sink, st, order, &plain, &delayed,
				      !bad && validate(L, &c), gpu_transport_name(L->o, L->o->gpu_engine),
				      params)) {
		L->failed++;
	}
	gic_samples_free(&plain);
	gic_samples_free(&delayed);
}

/* Where a mini-gda sample's payload comes from. */
enum {
	SRC_INLINE8 = 0, /* 8 bytes in registers, gic_wqe_write_inline_u64 (Table 3's row) */
	SRC_POINTER = 1, /* read by the NIC from PE0's source region */
	SRC_REGS = 2,    /* inline, in registers: gic_wqe_write_inline_regs (--sweep) */
	SRC_STAGED = 3,  /* inline, loaded from GPU memory in the span (--sweep) */
	SRC_DC = 4,      /* SRC_INLINE8 on PE0's DCI, the compact AV (gda-dc) */
	SRC_DC_FULL = 5, /* the same, the full AV (gda-dc-full) */
};

/* One mini-gda configuration: a path, an order, a size, a completion
 * scope, on this env's QPs (L->e.cfg.nqps); emits the selected metrics.
 * first: this order's first scope on this count, which also runs the
 * floor (first count only) and the round trip (it completes nothing, so
 * one per count). */
static void gda_one(lat_run *L, const lat_state *st, int src, int order, uint32_t size,
		    int sweep, int scope, int first)
{
	static const char *const paths[] = { "gda-inline", "gda-pointer", "gda-inline",
					      "gda-inline-staged", "gda-dc", "gda-dc-full" };
	static const char *const payloads[] = { "registers", "pointer", "registers", "memory",
						 "registers", "registers" };
	static const char *const notes[] = {
		"", "",
		"payload in registers when the clock starts (the paper's mini-gda): one 16-byte "
		"store per segment",
		"payload loaded from a staging buffer in GPU memory inside the timed span (the "
		"payload-in-memory case)",
		"DC: PE0's DCI to PE1's DCT, the compact 16-byte AV in registers when the clock "
		"starts (one BB, 4 segments); softnic looks the DCT up, no DC connection handshake",
		"DC: PE0's DCI to PE1's DCT, the full 48-byte AV in registers when the clock "
		"starts (two BBs, 6 segments); softnic looks the DCT up, no DC connection handshake",
	};
	int dc = src == SRC_DC || src == SRC_DC_FULL;
	gda_kernel_fn fn = src == SRC_REGS ? regs_kernel(order, size)
			   : dc ? dc_kernels[order][src == SRC_DC_FULL]
			   : gda_kernels[order][src == SRC_POINTER ? K_POINTER
						 : src == SRC_STAGED ? K_INLINE : K_INLINE8];
	gic_sq *pe0 = dc ? L->e.d_dci_sq : L->e.d_sq, *pe1 = dc ? L->e.d_dci_sq + 1 : L->e.d_peer_sq;
	gda_cfg c;
	char name[128], rname[128], params[256], rparams[256], issue_note[512], putc_note[256];
	char qps[32], dcp[64] = "";
	const char *path = paths[src];
	int bad, valid, nq = L->e.cfg.nqps, named = !sweep && !dc && gic_lat_scope_named(st);

	if (!fn) {
		fprintf(stderr, "gic lat --sweep: size %u: no register-payload kernel of that size "
			"(built: 8 12 16 32 48 64 128 256 512); its staged row runs\n", size);
		return;
	}
	gda_cfg_fill(L, &c, src == SRC_POINTER, size, nq, scope);
	if (dc) { /* the AVs, once per target: the env's (key, DCT number, route) */
		int full = src == SRC_DC_FULL;

		if (L->e.dc_av_rc[1][full] || L->e.dc_av_rc[0][full]) {
			fprintf(stderr, "gic lat: %s: the %s address vector is not available here: "
				"%s\n", paths[src], full ? "full" : "compact",
				strerror(L->e.dc_av_rc[1][full] ? L->e.dc_av_rc[1][full]
								: L->e.dc_av_rc[0][full]));
			L->failed++;
			return;
		}
		c.av = L->e.dc_av[1][full];
		c.back_av = L->e.dc_av[0][full];
		snprintf(dcp, sizeof(dcp), " transport=dc av=%s",
			 src == SRC_DC_FULL ? "full" : "compact");
		L->used = ENV_QP_DCI0;
	}
	/* One DCI (dc): its own CQ, whatever QPs the RC rows configure. */
	if (dc)
		snprintf(qps, sizeof(qps), "dci=1");
	else
		snprintf(qps, sizeof(qps), "qps=%d", nq);
	if (sweep)
		snprintf(name, sizeof(name), "%s %s size=%u", path, gic_lat_order_name(order), size);
	else if (named)
		snprintf(name, sizeof(name), "%s %s qps=%d scope=%s", path, gic_lat_order_name(order),
			 nq, gic_lat_scope_name(scope));
	else
		snprintf(name, sizeof(name), "%s %s", path, gic_lat_order_name(order));
	/* The round trip's name and params carry the count, not the scope. */
	if (named)
		snprintf(rname, sizeof(rname), "%s %s qps=%d", path, gic_lat_order_name(order), nq);
	else
		snprintf(rname, sizeof(rname), "%s", name);
	snprintf(rparams, sizeof(rparams), "size=%u %s scope=none order=%s payload=%s%s%s", size,
		 qps, gic_lat_order_name(order), payloads[src], dcp, dc ? " answer=dc" : "");
	snprintf(params, sizeof(params), "size=%u %s scope=%s order=%s payload=%s%s", size,
		 qps, gic_lat_scope_name(scope), gic_lat_order_name(order), payloads[src], dcp);
	snprintf(putc_note, sizeof(putc_note), "completion by softnic (not a NIC number)%s",
		 scope == GIC_LAT_SCOPE_ALL ? "; then every other QP's CQ polled (a CQE read each)"
		 : scope == GIC_LAT_SCOPE_PROGRESS ? "; then every other QP's published and retired "
						      "positions read, L2 not L1, a CTA fence each "
						      "(NVSHMEM 3.8's IBGDA quiet)"
						    : "");
	snprintf(issue_note, sizeof(issue_note), "%s", notes[src]);
	if ((st->metrics & GIC_LAT_ISSUE) && size == 8 && src != SRC_STAGED && !dc && first &&
	    L->first_count) {
		/* The floor first: the issue row's note cites it. */
		double fl = floor_of(L, order, name, params, src != SRC_POINTER);

		snprintf(issue_note, sizeof(issue_note),
			 "%s%s%sfloor here (same stores and fences, no queue logic) %.3f us; softnic's "
			 "doorbell is a GPU-memory store, not MMIO", notes[src], *notes[src] ? "; " : "",
			 order == GIC_ORDER_NONE ? "unordered, unsafe; " : "", fl);
	}
	for (int rtt = 0; rtt <= 1; rtt++) {
		if (rtt ? !(st->metrics & GIC_LAT_RTT) || size != 8 || !first
			: !(st->metrics & (GIC_LAT_ISSUE | GIC_LAT_PUTC)))
			continue;
		c.rtt = rtt;
		if (prepare_payloads(L, size, c.stride)) {
			L->failed++;
			continue;
		}
		clear_samples(L, L->e.stream);
		fn<<<rtt ? 2 : 1, 1, 0, L->e.stream>>>(pe0, pe1, c, L->d);
		bad = run_samples(L, name);
		if (bad < 0) {
			L->failed++;
			L->used = 0;
			return;
		}
		valid = !bad && validate(L, &c);
		L->invalid += !valid;
		if (!rtt && (st->metrics & GIC_LAT_ISSUE))
			emit_cycles(L, name, "issue", 0, valid, params, issue_note, L->o->gpu_engine);
		if (!rtt && (st->metrics & GIC_LAT_PUTC))
			emit_cycles(L, name, "put+completion", 1, valid, params, putc_note,
				    L->o->gpu_engine);
		if (rtt)
			emit_cycles(L, rname, "rtt", 1, valid, rparams,
				    dc ? "answer written by a GPU thread through softnic, PE1's DCI "
					 "to PE0's DCT (the same AV form)"
				       : "answer written by a GPU thread through softnic",
				    L->o->gpu_engine);
	}
	L->used = 0;
}

/* One --sweep size of gda-pointer (Figure 11): pointer writes of size
 * bytes through slots of the env's regions, each checked by the checker
 * CTA after its completion; issue and put+completion as selected. */
static void gda_sweep_one(lat_run *L, const lat_state *st, int order, uint32_t size, int scope)
{
	uint8_t *img[2];
	uint32_t bad[2] = { 0, 0 };
	char name[128], params[256];
	int nbad, valid;
	gda_cfg c;

	if (!(st->metrics & (GIC_LAT_ISSUE | GIC_LAT_PUTC)))
		return;
	gda_cfg_fill(L, &c, 1, size, L->e.cfg.nqps, scope);
	c.ck = sweep_check(L, L->e.src, L->e.dst, LAT_REGION, size);
	c.stride = c.ck.stride;
	snprintf(name, sizeof(name), "gda-pointer %s size=%u", gic_lat_order_name(order), size);
	snprintf(params, sizeof(params), "size=%u qps=%d scope=%s order=%s payload=pointer "
		 "slots=%u check=each", size, c.nq, gic_lat_scope_name(scope),
		 gic_lat_order_name(order), c.ck.slots);
	gic_progress("lat", 0, 0, name);
	img[0] = sweep_image(&c.ck, 0);
	img[1] = sweep_image(&c.ck, 1);
	if (!img[0] || !img[1] ||
	    gpu_env_write(&L->e, L->e.src, img[0], (size_t)c.ck.slots * c.ck.stride) ||
	    gpu_env_write(&L->e, L->e.dst, img[1], (size_t)c.ck.slots * c.ck.stride)) {
		free(img[0]);
		free(img[1]);
		L->failed++;
		return;
	}
	free(img[0]);
	free(img[1]);
	sweep_clear(L, L->e.stream);
	sweep_kernels[order]<<<2, LAT_CHECK_THREADS, 0, L->e.stream>>>(L->e.d_sq, c, L->d);
	nbad = run_samples(L, name);
	if (nbad < 0 || gpu_env_read(&L->e, bad, c.ck.bad, sizeof(bad))) {
		L->failed++;
		return;
	}
	valid = !nbad && sweep_valid(name, bad);
	L->invalid += !valid;
	if (st->metrics & GIC_LAT_ISSUE)
		emit_cycles(L, name, "issue", 0, valid, params, "pointer write (a data segment "
			    "naming PE0's registered source)", L->o->gpu_engine);
	if (st->metrics & GIC_LAT_PUTC)
		emit_cycles(L, name, "put+completion", 1, valid, params, "completion by softnic "
			    "(not a NIC number); every destination checked after its completion, "
			    "outside the span", L->o->gpu_engine);
}

/* A view shaped like a queue, in memory of the queue's placement. */
static int make_scratch(lat_run *L)
{
	gic_sq s;
	size_t ring = 1024 * 64;

	if (L->o->gpu_engine) {
		if (cudaMalloc(&L->scratch_mem, ring + 128) != cudaSuccess)
			return ENOMEM;
	} else if (!(L->scratch_mem = gpu_mapped_alloc(ring + 128, 4096, NULL))) {
		return ENOMEM;
	}
	memset(&s, 0, sizeof(s));
	s.wqes = (uint8_t *)L->scratch_mem;
	s.dbrec = (uint32_t *)((uint8_t *)L->scratch_mem + ring);
	s.db = (uint64_t *)((uint8_t *)L->scratch_mem + ring + 64);
	s.bb_cnt = 1024;
	if (cudaMalloc(&L->scratch, sizeof(s)) != cudaSuccess)
		return ENOMEM;
	return cudaMemcpy(L->scratch, &s, sizeof(s), cudaMemcpyHostToDevice) == cudaSuccess ? 0 : EIO;
}

/* After a row: when it failed or did not validate (L->failed + L->invalid
 * moved past failed_before), its QP may be in error (the unsafe "none" order can let the engine read a
 * WQE before its stores land), which would fail every later row of the
 * env; so the env is made again. */
static void gda_after_row(lat_run *L, int failed_before, const gpu_env_cfg *cfg)
{
	if (L->failed + L->invalid == failed_before)
		return;
	fprintf(stderr, "gic lat: a row failed: its fixture is made again for the next rows\n");
	gpu_env_close(&L->e);
	gpu_env_open(&L->e, cfg);
}

/* The mini-gda rows of one --qps count (a softnic env of its own, so the
 * engine scans only the QPs configured); the sweep and the timer check
 * with the first count only. */
static void gda_count(lat_run *L, const lat_state *st, int nq)
{
	gpu_env_cfg cfg = { L->o->gpu_engine, nq, 10, LAT_REGION, 0, 4, 4 };

	gpu_env_cfg_nic(&cfg, L->o);
	/* The DC rows: the first count's env, beside its RC rows. */
	cfg.dc = L->first_count && !st->sweep && (st->paths & GIC_LAT_GDA_DC_ANY);
	gpu_env_open(&L->e, &cfg);
	for (int p = 0; p < 2 && !st->sweep; p++) { /* --sweep: the sweep's rows only */
		if (!(st->paths & (p ? GIC_LAT_GDA_POINTER : GIC_LAT_GDA_INLINE)))
			continue;
		for (int o = 0; o < GIC_LAT_ORDERS; o++) {
			int first = 1;

			if (!(st->orders & (1u << o)))
				continue;
			gic_progress("lat", o, GIC_LAT_ORDERS, gic_lat_order_name(o));
			for (int sc = 0; sc < GIC_LAT_SCOPES; sc++)
				if (st->scopes & (1u << sc)) {
					int f0 = L->failed + L->invalid;

					gda_one(L, st, p ? SRC_POINTER : SRC_INLINE8, o, 8, 0, sc,
						first);
					gda_after_row(L, f0, &cfg);
					first = 0;
				}
		}
	}
	for (int full = 0; full <= 1 && cfg.dc; full++) {
		if (!(st->paths & (full ? GIC_LAT_GDA_DC_FULL : GIC_LAT_GDA_DC)))
			continue;
		for (int o = 0; o < GIC_LAT_ORDERS; o++)
			if (st->orders & (1u << o)) {
				int f0 = L->failed + L->invalid;

				gic_progress("lat", o, GIC_LAT_ORDERS, full ? "gda-dc-full" : "gda-dc");
				gda_one(L, st, full ? SRC_DC_FULL : SRC_DC, o, 8, 0, GIC_LAT_SCOPE_QP, 1);
				gda_after_row(L, f0, &cfg);
			}
	}
	if (st->sweep && L->first_count && (st->paths & GIC_LAT_GDA_INLINE)) {
		/* Sizes: -b/-e/-f when given; else 8 .. 512 B by 2 (Figure 3a). */
		size_t max = LAT_REGION / L->n;
		int sc0 = __builtin_ctz(st->scopes); /* --sweep takes one scope */

		for (int k = 0; k < L->nsizes[GIC_LAT_SWEEP_INLINE]; k++) {
			uint32_t size = (uint32_t)L->sizes[GIC_LAT_SWEEP_INLINE][k];

			if (size > max) {
				fprintf(stderr, "gic lat --sweep: size %u skipped (%zu B per sample fit "
					"the region)\n", size, max);
				continue;
			}
			/* The register payload (the paper's), then the staged one. */
			for (int o = 0; o < GIC_LAT_ORDERS; o++)
				if (st->orders & (1u << o)) {
					int f0 = L->failed + L->invalid;

					gda_one(L, st, SRC_REGS, o, size, 1, sc0, 1);
					gda_after_row(L, f0, &cfg);
					f0 = L->failed + L->invalid;
					gda_one(L, st, SRC_STAGED, o, size, 1, sc0, 1);
					gda_after_row(L, f0, &cfg);
				}
		}
	}
	if (st->sweep && L->first_count && (st->paths & GIC_LAT_GDA_POINTER))
		for (int k = 0; k < L->nsizes[GIC_LAT_SWEEP_POINTER]; k++)
			for (int o = 0; o < GIC_LAT_ORDERS; o++)
				if (st->orders & (1u << o)) {
					int f0 = L->failed + L->invalid;

					gda_sweep_one(L, st, o,
						      (uint32_t)L->sizes[GIC_LAT_SWEEP_POINTER][k],
						      __builtin_ctz(st->scopes));
					gda_after_row(L, f0, &cfg);
				}
	if (L->first_count && (st->metrics & GIC_LAT_TIMER))
		gda_timer(L, st);
	gpu_env_close(&L->e);
}

static void gda_all(lat_run *L, const lat_state *st)
{
	/* Every CUDA allocation before the engine starts (docs/DESIGN.md §4.5). */
	if (cudaMalloc(&L->stage, LAT_REGION) != cudaSuccess || make_scratch(L)) {
		L->failed++;
		return;
	}
	for (int k = 0; k < st->nqps; k++) {
		L->first_count = k == 0;
		gic_progress("lat", k + 1, st->nqps, "QP count");
		gda_count(L, st, st->qps[k]);
	}
	cudaFree(L->stage);
	cudaFree(L->scratch);
	if (L->o->gpu_engine)
		cudaFree(L->scratch_mem);
	else
		gpu_mapped_free(L->scratch_mem, NULL);
}

/* ------------------------------------------------------------------ */
/* mini-proxy paths. */

/* PE0 enqueues request i (8 bytes into PE1) and waits for counter i + 1
 * (put+completion); or, for round trips, for PE1's answer in its own
 * region while PE1 (block 1) answers through proxy 1. */
template <int TUNED>
static __device__ void proxy_side(gic_proxy_ring *g, int pe, const uint64_t *in,
				  const uint64_t *counter, int n, int rtt, lat_sample *out)
{
	gic_proxy_ring local = *g;
	gic_proxy_ring *r = TUNED ? &local : g; /* baseline: atomics on the global view */

	long long c1 = 0;

	for (int i = 0; i < n; i++) {
		int k = gpu_after_clock(i, c1); /* inputs after the last clock */
		gic_proxy_desc d = { 0, 0 };
		uint64_t deadline = DL, want = pe ? lat_val(k, 1) : ~lat_val(k, 1);
		int rc = 0;

		if (pe == 1) /* the request first */
			rc = gpu_wait_word(&in[k], want);
		if (!rc)
			rc = gic_proxy_desc_inline(&d, 8 * (uint64_t)k,
						   pe ? ~lat_val(k, 1) : lat_val(k, 1), 8, 0);
		asm volatile("" : "+l"(d.header), "+l"(d.payload), "+l"(deadline));
		long long c0 = clock64();
		if (!rc)
			rc = TUNED ? gic_proxy_enqueue_tuned(r, &d, deadline, NULL)
				   : gic_proxy_enqueue_baseline(r, &d, deadline, NULL);
		c1 = clock64();
		if (pe == 0 && !rc)
			rc = rtt ? gpu_wait_word(&in[i], want)
				 : gic_proxy_wait_counter(r, counter, (uint64_t)i + 1, deadline);
		if (pe == 0) {
			out[i].issue = c1 - c0;
			out[i].total = clock64() - c0;
			out[i].rc = rc;
		}
		if (rc)
			break;
	}
	if (TUNED)
		*g = local;
}

__global__ void proxy_lat_kernel(gic_proxy_ring *v0, gic_proxy_ring *v1, const uint64_t *in0,
				 const uint64_t *in1, const uint64_t *counter, int n, int tuned,
				 int rtt, lat_sample *out)
{
	int pe = blockIdx.x;

	if (tuned)
		proxy_side<1>(pe ? v1 : v0, pe, pe ? in1 : in0, counter, n, rtt, out);
	else
		proxy_side<0>(pe ? v1 : v0, pe, pe ? in1 : in0, counter, n, rtt, out);
}

/* --sweep's proxy rows: PE0 enqueues pointer writes of ck.size bytes from
 * its source slot to PE1's slot, waits for counter base + i + 1, and hands
 * each sample to the checker (block 1). */
template <int TUNED>
static __device__ void proxy_sweep_pe0(gic_proxy_ring *g, const uint64_t *counter, uint64_t base,
				       const lat_check &ck, lat_sample *out)
{
	gic_proxy_ring local = *g;
	gic_proxy_ring *r = TUNED ? &local : g; /* baseline: atomics on the global view */
	long long c1 = 0;

	for (int i = 0; i < ck.n; i++) {
		int k = gpu_after_clock(i, c1); /* inputs after the last clock */
		uint64_t off = (uint64_t)((uint32_t)k % ck.slots) * ck.stride, deadline = DL;
		gic_proxy_desc d = { 0, 0 };
		int rc = gic_proxy_desc_pointer(&d, off, off, ck.size, 0);

		asm volatile("" : "+l"(d.header), "+l"(d.payload), "+l"(deadline));
		long long c0 = clock64();
		if (!rc)
			rc = TUNED ? gic_proxy_enqueue_tuned(r, &d, deadline, NULL)
				   : gic_proxy_enqueue_baseline(r, &d, deadline, NULL);
		c1 = clock64();
		if (!rc)
			rc = gic_proxy_wait_counter(r, counter, base + (uint64_t)i + 1, deadline);
		out[i].issue = c1 - c0;
		out[i].total = clock64() - c0;
		if (!rc)
			rc = lat_check_handoff(ck, i);
		out[i].rc = rc;
		if (rc) {
			gic_st_release_sys_u64(ck.ready, LAT_CHECK_ABORT);
			break;
		}
	}
	if (TUNED)
		*g = local;
}

__global__ void proxy_sweep_kernel(gic_proxy_ring *v0, const uint64_t *counter, uint64_t base,
				   int tuned, lat_check ck, lat_sample *out)
{
	if (blockIdx.x == 1)
		lat_checker(ck);
	else if (threadIdx.x == 0 && tuned)
		proxy_sweep_pe0<1>(v0, counter, base, ck, out);
	else if (threadIdx.x == 0)
		proxy_sweep_pe0<0>(v0, counter, base, ck, out);
}

/* The tuned enqueue's floor: one posted 16-byte store to mapped host
 * memory, as the tuned protocol makes, its address computed before the
 * clock starts. */
__global__ void store_floor_kernel(gic_proxy_desc *slots, int n, lat_sample *out)
{
	long long c1 = 0;

	for (int i = 0; i < n; i++) {
		int k = gpu_after_clock(i, c1); /* as proxy_side makes its inputs */
		gic_proxy_desc *slot = &slots[k & 255];
		uint64_t header = (uint64_t)k, payload = (uint64_t)k * 3;
		long long c0;

		asm volatile("" : "+l"(slot), "+l"(header), "+l"(payload));
		c0 = clock64();
		gic_proxy_slot_store16(slot, header, payload);
		c1 = clock64();
		out[i].issue = out[i].total = c1 - c0;
		out[i].rc = 0;
	}
}

/* What the baseline enqueue adds to a store: one system-scope acquire
 * read of host memory (the ring's progress), timed per read. */
__global__ void host_read_kernel(const gic_proxy_desc *slots, int n, lat_sample *out)
{
	uint64_t sink = 0;

	for (int i = 0; i < n; i++) {
		const uint64_t *p = &slots[i & 255].header;
		long long c0;

		asm volatile("" : "+l"(p));
		c0 = clock64();
		sink += gic_ld_acquire_sys_u64(p);
		out[i].issue = out[i].total = clock64() - c0;
		out[i].rc = 0;
	}
	if (sink == 42) /* keeps the loads */
		out[0].rc = 0;
}

/* Checks PE k's region: word i == want(i). */
static int proxy_check(proxy_env *e, int k, int n, int answer)
{
	uint64_t *h = (uint64_t *)malloc((size_t)n * 8);
	int ok = h && !proxy_env_read(e, h, e->region[k], (size_t)n * 8);

	for (int i = 0; i < n && ok; i++)
		ok = h[i] == (answer ? ~lat_val(i, 1) : lat_val(i, 1));
	free(h);
	return ok;
}

static void proxy_one(lat_run *L, const lat_state *st, int tuned)
{
	const char *name = tuned ? "proxy-tuned" : "proxy-baseline";
	proxy_env_cfg cfg = { PROXY_NIC_CPU, 2, 1, 1, 1, tuned, 0, (size_t)L->n * 8, 0 };
	const char *params = "T=1 R=1 B=1 size=8 counter=host";
	char issue_note[512] = "enqueue into mapped host memory";
	uint64_t *zeros = (uint64_t *)calloc(L->n, 8);
	proxy_env pe;

	gpu_proxy_env_nic(&cfg, L->o);
	if (!zeros || proxy_env_open(&pe, &cfg)) {
		if (zeros)
			proxy_env_close(&pe);
		free(zeros);
		L->failed++;
		return;
	}
	if (st->metrics & GIC_LAT_ISSUE) {
		/* The floor first: the issue row's note cites it. */
		clear_samples(L, pe.stream);
		store_floor_kernel<<<1, 1, 0, pe.stream>>>(pe.scratch, L->n, L->d);
		if (!proxy_env_wait(&pe, "store floor", 60) &&
		    !proxy_env_read(&pe, L->h, L->d, sizeof(lat_sample) * L->n)) {
			double store = run_p50(L, 0);

			snprintf(issue_note, sizeof(issue_note), "one posted 16-byte store to mapped "
				 "host memory, same run: %.3f us", store);
			if (tuned)
				emit_cycles(L, "proxy-tuned floor", "issue", 0, 1, params,
					    "one posted 16-byte store to mapped host memory", 0);
		}
		if (!tuned) { /* the baseline reads the progress from host memory */
			clear_samples(L, pe.stream);
			host_read_kernel<<<1, 1, 0, pe.stream>>>(pe.scratch, L->n, L->d);
			if (!proxy_env_wait(&pe, "host read", 60) &&
			    !proxy_env_read(&pe, L->h, L->d, sizeof(lat_sample) * L->n)) {
				snprintf(issue_note, sizeof(issue_note), "one acquire read of host "
					 "memory, same run: %.3f us (the baseline makes one, plus a "
					 "system-scope release)", run_p50(L, 0));
				emit_cycles(L, "proxy-baseline host read", "issue", 0, 1, params,
					    "one system-scope acquire read of mapped host memory", 0);
			}
		}
	}
	for (int rtt = 0; rtt <= 1; rtt++) {
		int bad, valid;

		if (rtt ? !(st->metrics & GIC_LAT_RTT) : !(st->metrics & (GIC_LAT_ISSUE | GIC_LAT_PUTC)))
			continue;
		clear_samples(L, pe.stream);
		proxy_lat_kernel<<<rtt ? 2 : 1, 1, 0, pe.stream>>>(pe.d_views[0], pe.d_views[1],
								    pe.region[0], pe.region[1],
								    &pe.counters[0][0], L->n, tuned,
								    rtt, L->d);
		if (proxy_env_wait(&pe, name, 120) ||
		    proxy_env_read(&pe, L->h, L->d, sizeof(lat_sample) * L->n)) {
			L->failed++;
			break;
		}
		bad = 0;
		for (int i = 0; i < L->n; i++)
			bad += L->h[i].rc != 0;
		valid = !bad && proxy_check(&pe, 1, L->n, 0) && (!rtt || proxy_check(&pe, 0, L->n, 1));
		if (bad)
			fprintf(stderr, "gic lat: %s: %d requests failed (%s)\n", name, bad,
				gic_proxy_error(pe.proxy[0]));
		if (!rtt && (st->metrics & GIC_LAT_ISSUE))
			emit_cycles(L, name, "issue", 0, valid, params, issue_note, 0);
		if (!rtt && (st->metrics & GIC_LAT_PUTC))
			emit_cycles(L, name, "put+completion", 1, valid, params,
				    "CPU workers, softnic CPU engine, host-resident counter", 0);
		if (rtt)
			emit_cycles(L, name, "rtt", 1, valid, params,
				    "two proxies; each PE polls its own (host-mapped) region", 0);
		/* The next run writes the same slots again. */
		if (proxy_env_write(&pe, pe.region[0], zeros, (size_t)L->n * 8) ||
		    proxy_env_write(&pe, pe.region[1], zeros, (size_t)L->n * 8))
			L->failed++;
	}
	proxy_env_close(&pe);
	free(zeros);
}

/* --sweep on a proxy path (Figure 11): one fixture (T1/R1/B1, the CPU
 * engine, GIC_LAT_SWEEP_REGION of slots), then per size pointer writes
 * from PE0's source slots into PE1's region, each checked by the checker
 * CTA after the proxy's counter covered it. */
static void proxy_sweep(lat_run *L, const lat_state *st, int tuned)
{
	const char *path = tuned ? "proxy-tuned" : "proxy-baseline";
	proxy_env_cfg cfg = { PROXY_NIC_CPU, 1, 1, 1, 1, tuned, 0, GIC_LAT_SWEEP_REGION, 0 };
	uint64_t base = 0; /* requests counter 0 covered so far */
	proxy_env pe;

	gpu_proxy_env_nic(&cfg, L->o);
	if (!(st->metrics & (GIC_LAT_ISSUE | GIC_LAT_PUTC)))
		return;
	if (proxy_env_open(&pe, &cfg)) {
		proxy_env_close(&pe);
		L->failed++;
		return;
	}
	for (int k = 0; k < L->nsizes[GIC_LAT_SWEEP_POINTER]; k++) {
		uint32_t size = (uint32_t)L->sizes[GIC_LAT_SWEEP_POINTER][k], bad[2] = { 0, 0 };
		lat_check ck = sweep_check(L, (const uint8_t *)pe.src[0], (uint8_t *)pe.region[1],
					   GIC_LAT_SWEEP_REGION, size);
		size_t bytes = (size_t)ck.slots * ck.stride;
		uint8_t *img[2] = { sweep_image(&ck, 0), sweep_image(&ck, 1) };
		char name[96], params[160];
		int nbad = 0, valid, ok;

		snprintf(name, sizeof(name), "%s size=%u", path, size);
		snprintf(params, sizeof(params), "T=1 R=1 B=1 size=%u counter=host payload=pointer "
			 "slots=%u check=each", size, ck.slots);
		gic_progress("lat", k + 1, L->nsizes[GIC_LAT_SWEEP_POINTER], name);
		ok = img[0] && img[1] && !proxy_env_write(&pe, pe.src[0], img[0], bytes) &&
		     !proxy_env_write(&pe, pe.region[1], img[1], bytes);
		free(img[0]);
		free(img[1]);
		if (!ok) {
			L->failed++;
			break;
		}
		sweep_clear(L, pe.stream);
		proxy_sweep_kernel<<<2, LAT_CHECK_THREADS, 0, pe.stream>>>(
			pe.d_views[0], &pe.counters[0][0], base, tuned, ck, L->d);
		if (cudaGetLastError() != cudaSuccess || proxy_env_wait(&pe, name, 120) ||
		    proxy_env_read(&pe, L->h, L->d, sizeof(lat_sample) * L->n) ||
		    proxy_env_read(&pe, bad, ck.bad, sizeof(bad))) {
			L->failed++;
			break;
		}
		for (int i = 0; i < L->n; i++)
			nbad += L->h[i].rc != 0;
		if (nbad)
			fprintf(stderr, "gic lat: %s: %d requests failed (%s)\n", name, nbad,
				gic_proxy_error(pe.proxy[0]));
		valid = !nbad && sweep_valid(name, bad);
	L->invalid += !valid;
		if (st->metrics & GIC_LAT_ISSUE)
			emit_cycles(L, name, "issue", 0, valid, params,
				    "enqueue of a pointer descriptor into mapped host memory", 0);
		if (st->metrics & GIC_LAT_PUTC)
			emit_cycles(L, name, "put+completion", 1, valid, params,
				    "CPU worker, softnic CPU engine, host-resident counter; every "
				    "destination checked after its completion, outside the span", 0);
		if (nbad) /* the counter's state is unknown: no further size on it */
			break;
		base += (uint64_t)L->n;
	}
	proxy_env_close(&pe);
}

/* ------------------------------------------------------------------ */
/* gda-hostdb. */

enum { LAT_RINGER_CPU = 2 /* the ringer's core (not pinned on fewer) */ };


/* One fixture with PE0's doorbells in mapped host memory: the poster-rung
 * control (gda-inline fence-gpu's kernel), then the host-rung write with a
 * ringer thread; each emitted with issue and put+completion as selected. */
static void gda_hostdb(lat_run *L, const lat_state *st)
{
	gpu_env_cfg cfg = { L->o->gpu_engine, 1, 10, LAT_REGION, 0, 4, 4 };
	uint64_t *progress = (uint64_t *)gpu_mapped_alloc(64, 64, NULL);
	uint8_t *zeros = (uint8_t *)calloc((size_t)L->n, 8);
	double control_p50 = 0;
	gic_hostdb ringer;
	gic_sq view;
	int control_order;
	const char *where;

	cfg.host_doorbells = 1;
	gpu_env_cfg_nic(&cfg, L->o);
	if (!progress || !zeros) { /* before the engine starts (docs/DESIGN.md §4.5) */
		free(zeros);
		L->failed++;
		return;
	}
	gpu_env_open(&L->e, &cfg);
	/* The control's order follows the queues' reader (fence-gpu for
	 * softnic's GPU engine, fence-sys for a reader outside the GPU). */
	control_order = gpu_env_post_order(&L->e);
	for (int host_rung = 0; host_rung <= 1; host_rung++) {
		const char *name = host_rung ? "gda-hostdb" : "gda-hostdb control";
		char params[160], note[160]; /* gic_result.note */
		gda_cfg c;
		int bad, valid, started = 0;

		gda_cfg_fill(L, &c, 0, 8, 1, GIC_LAT_SCOPE_QP);
		c.progress = progress;
		if (gpu_env_write(&L->e, L->e.dst, zeros, (size_t)L->n * 8)) {
			L->failed++;
			break;
		}
		if (host_rung) {
			uint64_t target;

			/* The view as the control left it (its resv), then the word
			 * caught up to it: no ringer runs yet. */
			if (cudaMemcpy(&view, L->e.d_sq, sizeof(view), cudaMemcpyDeviceToHost) !=
			    cudaSuccess) {
				L->failed++;
				break;
			}
			gic_st_release_sys_u64(progress, view.resv);
			target = view.resv + (uint64_t)L->n; /* a BB per sample */
			/* The ringer stores where a host thread can (on mlx5 the
			 * provider's host view of the UAR). */
			if (!(view.db = gpu_env_host_doorbell(&L->e, 0)) ||
			    gic_hostdb_init(&ringer, &view, 1, progress,
					    LAT_RINGER_CPU < sysconf(_SC_NPROCESSORS_ONLN)
						    ? LAT_RINGER_CPU : -1, 0) ||
			    gic_hostdb_start(&ringer, &target, 60ull * 1000000000ull)) {
				fprintf(stderr, "gic lat: gda-hostdb: the host doorbell thread did not "
					"start\n");
				L->failed++;
				break;
			}
			started = 1;
		}
		clear_samples(L, L->e.stream);
		(host_rung ? hostdb_kernel : gda_kernels[control_order][K_INLINE8])
			<<<1, 1, 0, L->e.stream>>>(L->e.d_sq, L->e.d_peer_sq, c, L->d);
		bad = run_samples(L, name);
		if (started) { /* the kernel ended: a ringer short of its target ends now */
			gic_hostdb_stop(&ringer);
			if (gic_hostdb_join(&ringer, "lat") && bad == 0)
				bad = 1;
		}
		if (bad < 0) {
			L->failed++;
			break;
		}
		valid = !bad && validate(L, &c);
		if (!host_rung)
			control_p50 = run_p50(L, 1);
		snprintf(params, sizeof(params), "size=8 qps=1 scope=qp order=%s payload=registers "
			 "doorbell=%s", host_rung ? "release-sys" : gic_lat_order_name(control_order),
			 host_rung ? "host-rung" : "poster");
		if (L->o->provider != GIC_PROV_MLX5)
			where = "doorbells in mapped host memory, softnic at system scope";
		else if (host_rung)
			where = "the ringer stores to the UAR through the provider's host view";
		else
			where = "the poster rings its device view's doorbell (the provider "
				"forwards it where the GPU cannot map the UAR)";
		if (host_rung)
			snprintf(note, sizeof(note), "host-rung: put+completion p50 %+.3f us against "
				 "the control (paper: 2.6-5.8 us more); %s",
				 run_p50(L, 1) - control_p50, where);
		else
			snprintf(note, sizeof(note), "control: the poster rings (gda-inline %s's "
				 "kernel); %s", gic_lat_order_name(control_order), where);
		if (st->metrics & GIC_LAT_ISSUE)
			emit_cycles(L, name, "issue", 0, valid, params, note, L->o->gpu_engine);
		if (st->metrics & GIC_LAT_PUTC)
			emit_cycles(L, name, "put+completion", 1, valid, params, note,
				    L->o->gpu_engine);
	}
	gpu_env_close(&L->e);
	gpu_mapped_free(progress, NULL);
	free(zeros);
}

/* ------------------------------------------------------------------ */

int gic_gpu_lat(const gic_opts *o, const lat_state *st, const gic_run_info *info,
		gic_sink *sink)
{
	lat_run L;

	memset(&L, 0, sizeof(L));
	L.o = o;
	L.info = info;
	L.sink = sink;
	L.n = o->iters + o->warmup;
	if (!gic_lat_gpu_samples_ok(L.n))
		return EINVAL;
	if (info->sm_mhz <= 0)
		return ENODEV;
	if (st->sweep) { /* every family's sizes checked before anything runs */
		for (int fam = 0; fam < 2; fam++)
			if ((st->paths & (fam ? GIC_LAT_GDA_POINTER | GIC_LAT_PROXY_BASELINE |
						GIC_LAT_PROXY_TUNED : GIC_LAT_GDA_INLINE)) &&
			    gic_lat_sweep_sizes(o, fam, 900, L.sizes[fam], &L.nsizes[fam]))
				return EINVAL;
	}
	L.h = (lat_sample *)calloc(L.n, sizeof(lat_sample));
	L.v = (double *)calloc(L.n, sizeof(double));
	if (!L.h || !L.v || cudaMalloc(&L.d, sizeof(lat_sample) * L.n) != cudaSuccess ||
	    cudaMalloc(&L.ckw, 64 * sizeof(uint64_t)) != cudaSuccess) {
		cudaFree(L.d);
		free(L.h);
		free(L.v);
		return ENOMEM;
	}
	if (st->paths & (GIC_LAT_GDA_INLINE | GIC_LAT_GDA_POINTER | GIC_LAT_GDA_DC_ANY))
		gda_all(&L, st);
	for (int tuned = 0; tuned <= 1; tuned++) {
		if (!(st->paths & (tuned ? GIC_LAT_PROXY_TUNED : GIC_LAT_PROXY_BASELINE)) ||
		    !(st->metrics & GIC_LAT_METRIC_ALL))
			continue;
		if (st->sweep)
			proxy_sweep(&L, st, tuned);
		else
			proxy_one(&L, st, tuned);
	}
	if ((st->paths & GIC_LAT_GDA_HOSTDB) && (st->metrics & (GIC_LAT_ISSUE | GIC_LAT_PUTC)))
		gda_hostdb(&L, st);
	cudaFree(L.ckw);
	cudaFree(L.d);
	free(L.h);
	free(L.v);
	return L.failed ? EIO : 0;
}

/* ------------------------------------------------------------------ */
/* --procs 2 in GPU mode (gic_gpu_lat_pe): each PE a process of its own on
 * the GPU, the QPs connected through softnic's GPU peers. The timed bodies
 * are gda_pe0 and gda_pe1 above, one per process. */

template <int O>
__global__ void gda_pe0_kernel(gic_sq *g, gda_cfg c, lat_sample *out)
{
	gda_pe0<O, K_INLINE8, 0>(g, c, out);
}

template <int O>
__global__ void gda_pe1_kernel(gic_sq *g, gda_cfg c)
{
	gda_pe1<O, 0, K_INLINE8>(g, c);
}

/* This PE's pair (gpu_pair.h: a one-warp GPU engine, one QP, a region of
 * n samples) and its sample buffer, allocated before the engine starts. */
typedef struct lat_proc {
	gpu_pair_pe pe;
	lat_sample *d;
} lat_proc;

static int lat_proc_open(lat_proc *P, gic_pair *pair, const gic_opts *o, int n)
{
	gpu_pair_cfg c = { o->device, 1, 12, (size_t)n * 8, 1, 1 }; /* two engines: a warp each */

	cudaFuncAttributes fa;

	P->d = NULL;
	/* The kernels touched before the engine starts: eager loading (set by
	 * gic_gpu_available(), which also chose the device) has loaded them
	 * already; a lazy load beside the engine would never end. */
	if (cudaFuncGetAttributes(&fa, gda_pe0_kernel<GIC_ORDER_FENCE_GPU>) != cudaSuccess ||
	    cudaFuncGetAttributes(&fa, gda_pe1_kernel<GIC_ORDER_FENCE_GPU>) != cudaSuccess ||
	    cudaMalloc((void **)&P->d, sizeof(lat_sample) * (size_t)n) != cudaSuccess) {
		fprintf(stderr, "gic lat: PE%d: CUDA: %s\n", gic_pair_rank(pair),
			cudaGetErrorString(cudaGetLastError()));
		return gpu_pair_open_failed(&P->pe, pair, "lat", ENOMEM);
	}
	return gpu_pair_open(&P->pe, pair, "lat", &c);
}

static void lat_proc_finish(lat_proc *P, gic_pair *pair)
{
	gpu_pair_finish(&P->pe, pair);
	cudaFree(P->d);
}

/* The words of this PE's region after a measurement: PE 1's hold every
 * request (lat_val), PE 0's every answer (its complement). 1 when all do. */
static int lat_proc_check(const lat_proc *P, int rank, int n, int rtt)
{
	uint64_t *w = (uint64_t *)malloc((size_t)n * 8);
	int ok = w && cudaMemcpy(w, P->pe.region, (size_t)n * 8, cudaMemcpyDeviceToHost) == cudaSuccess;

	for (int i = 0; i < n && ok && (rank == 1 || rtt); i++)
		ok = w[i] == (rank == 1 ? lat_val(i, 1) : ~lat_val(i, 1));
	if (!ok)
		fprintf(stderr, "gic lat: PE%d: a %s did not land\n", rank, rank ? "request" : "answer");
	free(w);
	return ok;
}

/* PE 0's rows of one measurement: the issue times (put+completion run
 * only) and the totals. */
static void lat_proc_rows(gic_pair *pair, const lat_sample *h, int n, int warmup, double mhz,
			  int rtt, unsigned metrics, int mps, int valid)
{
	double *v = (double *)malloc(sizeof(double) * (size_t)n);

	for (int total = rtt; total <= 1 && v; total++) {
		unsigned bit = !total ? GIC_LAT_ISSUE : rtt ? GIC_LAT_RTT : GIC_LAT_PUTC;
		gic_result r;

		if (!(metrics & bit))
			continue;
		gic_result_init(&r, "lat", "gda-inline fence-gpu", gic_lat_metric_name(bit), "us");
		for (int i = 0; i < n; i++)
			v[i] = (double)(total ? h[i].total : h[i].issue) / mhz;
		gic_result_param(&r, "size=8 qps=1 order=fence-gpu procs=2 engine=1x1 mps=%d", mps);
		snprintf(r.transport, sizeof(r.transport), "softnic-gpu");
		snprintf(r.note, sizeof(r.note), "peer: another process on this GPU (GPU peers); %s",
			 mps ? "MPS" : "no MPS: kernels time-slice");
		r.validated = valid;
		gic_result_set_values(&r, v, (size_t)n, (size_t)warmup);
		gic_pair_put(pair, NULL, &r);
	}
	free(v);
}

/* One measurement (rtt: the round trip, else put+completion). */
static int lat_proc_run(gic_pair *pair, lat_proc *P, int n, const gic_opts *o, double mhz,
			unsigned metrics, int rtt)
{
	int rank = P->pe.rank;
	lat_sample *h = (lat_sample *)calloc((size_t)n, sizeof(lat_sample));
	gda_cfg c;
	int rc = 0, ok;

	memset(&c, 0, sizeof(c));
	c.n = n;
	c.size = 8;
	c.stride = 8;
	c.nq = 1;
	c.rtt = rtt;
	gpu_pair_region(&P->pe, 1, &c.dst, &c.rkey);
	gpu_pair_region(&P->pe, 0, &c.back, &c.back_rkey);
	cudaMemsetAsync(P->pe.region, 0, (size_t)n * 8, P->pe.stream);
	cudaMemsetAsync(P->d, 0xff, sizeof(lat_sample) * (size_t)n, P->pe.stream);
	cudaStreamSynchronize(P->pe.stream); /* never cudaDeviceSynchronize: the engine runs */
	gpu_pair_sync(pair); /* both regions cleared */
	if (rank == 0)
		gda_pe0_kernel<GIC_ORDER_FENCE_GPU><<<1, 1, 0, P->pe.stream>>>(P->pe.d_sq, c, P->d);
	else if (rtt)
		gda_pe1_kernel<GIC_ORDER_FENCE_GPU><<<1, 1, 0, P->pe.stream>>>(P->pe.d_sq, c);
	rc = gpu_pair_wait(&P->pe, "the kernel", 120);
	gpu_pair_sync(pair); /* PE 0's writes have completed */
	ok = !rc && h && lat_proc_check(P, rank, n, rtt);
	if (rank == 0 && h && !rc &&
	    cudaMemcpy(h, P->d, sizeof(lat_sample) * (size_t)n, cudaMemcpyDeviceToHost) == cudaSuccess) {
		for (int i = 0; i < n; i++)
			if (h[i].rc) {
				fprintf(stderr, "gic lat: PE0: sample %d: error %d (%s)\n", i, h[i].rc,
					softnic_qp_error(P->pe.qp[0]));
				ok = 0;
				break;
			}
		lat_proc_rows(pair, h, n, o->warmup, mhz, rtt, metrics, P->pe.mps, ok);
	}
	gic_pair_phase_done(pair, ok);
	free(h);
	return rc;
}

int gic_gpu_lat_pe(gic_pair *pair, const gic_opts *o, const lat_state *st)
{
	int rank = gic_pair_rank(pair), n = o->iters + o->warmup, rc;
	char gpu[128];
	double mhz = 0;
	lat_proc P;

	if (!gic_lat_gpu_samples_ok(n))
		return EINVAL;
	if (gic_gpu_available(gpu, sizeof(gpu), &mhz, o->device) || mhz <= 0) {
		fprintf(stderr, "gic lat: PE%d: no GPU %d\n", rank, o->device);
		return ENODEV; /* this PE ends; the driver stops the other */
	}
	rc = lat_proc_open(&P, pair, o, n);
	if (!rc && rank == 0 && !P.pe.mps)
		gpu_pair_warn_mps("lat");
	if (!rc && (st->metrics & (GIC_LAT_ISSUE | GIC_LAT_PUTC)))
		rc = lat_proc_run(pair, &P, n, o, mhz, st->metrics, 0);
	if (!rc && (st->metrics & GIC_LAT_RTT))
		rc = lat_proc_run(pair, &P, n, o, mhz, st->metrics, 1);
	lat_proc_finish(&P, pair);
	return rc;
}
