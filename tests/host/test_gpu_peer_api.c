/*
 * gic/softnic_gpu_peer.h without a GPU: every refusal that needs no CUDA
 * device (the GPU runs are gic-gpu-xproc's, on the device machine).
 */
#include <errno.h>
#include <string.h>

#include "gic/softnic_gpu_peer.h"
#include "testkit.h"

static softnic *cpu_nic(void)
{
	softnic_attr attr;

	memset(&attr, 0, sizeof(attr));
	attr.engine_threads = 1;
	return softnic_open(&attr);
}

/* A CPU-engine softnic cannot be a GPU peer, and says why. */
CASE(enable_needs_gpu_engine)
{
	softnic *nic = cpu_nic();
	softnic_gpu_peer_rec rec;

	REQUIRE(nic, "softnic_open");
	CHECK(softnic_gpu_peer_enable(nic, &rec) == EINVAL, "enable on the CPU engine");
	CHECK(strstr(softnic_last_error(nic), "not a GPU-engine softnic"), "message: %s",
	      softnic_last_error(nic));
	CHECK(softnic_gpu_peer_enable(NULL, &rec) == EINVAL, "NULL softnic");
	softnic_close(nic);
}

/* Adding, connecting and syncing before enable are refused. */
CASE(calls_before_enable)
{
	softnic *nic = cpu_nic();
	softnic_gpu_peer_rec rec;
	softnic_pd *pd;
	softnic_cq *cq;
	softnic_qp *qp;
	softnic_qp_attr qa;
	int peer = -1;

	REQUIRE(nic, "softnic_open");
	memset(&rec, 0x5a, sizeof(rec));
	CHECK(softnic_gpu_peer_add(nic, &rec, &peer) == EINVAL && peer == -1, "add");
	CHECK(strstr(softnic_last_error(nic), "softnic_gpu_peer_enable was not called"),
	      "message: %s", softnic_last_error(nic));
	CHECK(softnic_gpu_peer_sync(nic) == EINVAL, "sync");
	pd = softnic_pd_alloc(nic);
	cq = softnic_cq_create(nic, 4);
	memset(&qa, 0, sizeof(qa));
	qa.log_sq_bb = 4;
	qa.send_cq = cq;
	qp = pd && cq ? softnic_qp_create(pd, &qa) : NULL;
	REQUIRE(qp, "QP");
	CHECK(softnic_gpu_peer_connect(qp, 0, 0x1234) == EINVAL, "connect");
	CHECK(softnic_qp_num(qp) && !softnic_qp_in_error(qp), "the QP is untouched");
	softnic_close(nic);
}

static const tk_case cases[] = {
	TK_ENTRY(enable_needs_gpu_engine), TK_ENTRY(calls_before_enable),
};

int main(int argc, char **argv)
{
	return tk_run_cases("test_gpu_peer_api", cases, sizeof(cases) / sizeof(cases[0]), argc, argv);
}
