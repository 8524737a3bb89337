/*
 * softnic execution on the CPU: the host entry points into the shared
 * execution core (engine_core.h), and the texts of its error codes.
 */
#include "softnic_internal.h"
#include "engine_core.h"
#include "wire.h"

int softnic_decode_wqe(const uint8_t *bytes, size_t avail, softnic_wqe *out,
		       uint8_t *vendor_syndrome)
{
	return snx_decode_wqe(bytes, avail, out, vendor_syndrome);
}

int softnic_decode_dci_wqe(const uint8_t *bytes, size_t avail, softnic_wqe *out,
			   uint8_t *vendor_syndrome)
{
	return snx_decode_dci_wqe(bytes, avail, out, vendor_syndrome);
}

int softnic_qp_progress_cpu(softnic_qp *qp, softnic_stats *st)
{
	if (qp->wire)
		return softnic_wire_progress(qp, st);
	return snx_qp_progress(qp->nic->shared, qp->s, st);
}

const char *softnic_vsynd_text(uint8_t vs)
{
	switch (vs) {
	case SOFTNIC_VSYND_BAD_OPCODE: return "unknown opcode";
	case SOFTNIC_VSYND_BAD_DS: return "bad ds (segment count) for the opcode";
	case SOFTNIC_VSYND_INLINE_OVERRUN: return "inline length runs past the WQE";
	case SOFTNIC_VSYND_BAD_LKEY: return "lkey not registered in the QP's PD";
	case SOFTNIC_VSYND_LOCAL_BOUNDS: return "local buffer outside its region";
	case SOFTNIC_VSYND_LOCAL_ACCESS: return "local region lacks LOCAL_WRITE";
	case SOFTNIC_VSYND_BAD_RKEY: return "rkey not registered in the peer's PD";
	case SOFTNIC_VSYND_REMOTE_BOUNDS: return "remote range outside its region";
	case SOFTNIC_VSYND_REMOTE_ACCESS: return "remote region lacks the needed right";
	case SOFTNIC_VSYND_ATOMIC_ALIGN: return "atomic target not aligned to its size";
	case SOFTNIC_VSYND_BAD_LENGTH:
		return "bad length (a message over 2 GiB, or an atomic's result buffer not its size)";
	case SOFTNIC_VSYND_NOT_CONNECTED: return "QP not connected";
	case SOFTNIC_VSYND_PEER_GONE: return "peer QP vanished";
	case SOFTNIC_VSYND_NO_RECV_CQ: return "peer has no receive CQ for a send or WRITE_IMM";
	case SOFTNIC_VSYND_WQE_PAST_DBREC: return "WQE extends past the doorbell record";
	case SOFTNIC_VSYND_BAD_DBREC: return "doorbell record moved back or past the ring";
	case SOFTNIC_VSYND_BAD_ATOMIC_SIZE: return "masked atomic's opmod names no 4- or 8-byte size";
	case SOFTNIC_VSYND_RNR: return "receiver not ready: no receive posted, retries exhausted";
	case SOFTNIC_VSYND_RECV_TOO_SMALL: return "message longer than the receive WQE";
	case SOFTNIC_VSYND_RECV_BAD_KEY: return "receive WQE's lkey, bounds or LOCAL_WRITE right";
	case SOFTNIC_VSYND_BAD_RQ_DBREC: return "receive doorbell record past the queue";
	case SOFTNIC_VSYND_DEVICE_OP:
		return "a SEND's data or a receive buffer in GPU memory (the CPU engine serves "
		       "writes, reads and atomics there)";
	case SOFTNIC_VSYND_ATOMIC_CONTENDED: return "masked atomic lost its compare-swap 2^20 times";
	case SOFTNIC_VSYND_INLINE_READ: return "RDMA READ with an inline segment";
	case SOFTNIC_VSYND_WIRE_TOO_LONG:
		return "message larger than the wire's payload ring (softnic_wire_enable)";
	case SOFTNIC_VSYND_QP_RIGHTS: return "the responder QP grants no such right (its access flags)";
	case SOFTNIC_VSYND_DC_BAD_KEY: return "DC access key of the address vector is not the DCT's";
	case SOFTNIC_VSYND_DC_NO_DCT:
		return "the address vector names no QP of this softnic (on a ConnectX: retries until "
		       "the transport retry count runs out)";
	case SOFTNIC_VSYND_DC_BAD_AV:
		return "DCI WQE's ds leaves no room for its address vector (compact: ds >= 2, full: "
		       "ds >= 4)";
	case SOFTNIC_VSYND_DC_NOT_DCI:
		return "a full DC address vector (EXTENDED_UD_AV where the rkey goes) on a QP that is "
		       "no DCI";
	case SOFTNIC_VSYND_DC_NOT_DCT:
		return "the address vector names a QP that is no DCT (or an RC WQE on a DCI)";
	case SOFTNIC_VSYND_COPY_TIMEOUT:
		return "GPU engine: the engine warps sharing a large write's copy did not finish it "
		       "within 1 s";
	case SOFTNIC_VSYND_STRICT_DB_AHEAD:
		return "strict: doorbell ahead of the doorbell record, never covered within the watch";
	case SOFTNIC_VSYND_STRICT_DB_QPN: return "strict: doorbell names another QP";
	case SOFTNIC_VSYND_STRICT_WQE_INDEX: return "strict: ctrl WQE index does not match its slot";
	case SOFTNIC_VSYND_PEER_UNMAPPED:
		return "the responder process's region is not mapped here yet (registered after the last "
		       "map refresh; softnic_gpu_peer_sync)";
	case SOFTNIC_VSYND_PEER_RECV:
		return "SEND or WRITE_IMM to a QP of another process: the GPU engine serves writes, reads "
		       "and atomics across processes only";
	case SOFTNIC_VSYND_NONE: return "no check failed";
	default: return "unknown check";
	}
}

