/*
 * softnic CPU engine: threads that poll their QPs' doorbell words and
 * execute what the doorbells announced. A QP belongs to one engine thread,
 * which gives per-QP in-order execution without per-WQE locking.
 */
#include <errno.h>
#include <sched.h>
#include <string.h>

#include "softnic_internal.h"
#include "wire.h"

enum { ENGINE_IDLE_SPINS = 4096 }; /* idle passes before an idle engine yields */

/* One pass over the engine's QPs under its lock; returns WQEs executed. */
static int engine_pass(engine *e)
{
	int done = 0;

	pthread_mutex_lock(&e->lock);
	for (int i = 0; i < e->nqps; i++)
		done += softnic_qp_progress_cpu(e->qps[i], &e->stats);
	pthread_mutex_unlock(&e->lock);
	return done;
}

static void *engine_main(void *arg)
{
	engine *e = arg;
	softnic *nic = e->nic;
	unsigned idle = 0;

	if (nic->attr.pin_engines) {
		cpu_set_t set;

		CPU_ZERO(&set);
		CPU_SET(nic->attr.first_cpu + e->index, &set);
		if (pthread_setaffinity_np(pthread_self(), sizeof(set), &set))
			softnic_set_error(nic, "engine %d: could not pin to CPU %d", e->index,
					  nic->attr.first_cpu + e->index);
	}
	/* A service loop, not a wait: it ends when softnic_close() sets stop. */
	while (!__atomic_load_n(&nic->shared->stop, __ATOMIC_ACQUIRE)) {
		int busy;

		if (__atomic_load_n(&e->mgmt_waiting, __ATOMIC_RELAXED)) {
			sched_yield();
			continue;
		}
		busy = engine_pass(e);
		if (e->index == 0)
			busy |= softnic_wire_service(nic);
		/* Idle for long: the CPU goes to whoever shares it (processes
		 * on a small host), then straight back. */
		idle = busy ? 0 : idle + 1;
		if (idle > ENGINE_IDLE_SPINS)
			sched_yield();
		else if (!busy)
			gic_cpu_relax();
	}
	return NULL;
}

void engine_lock_mgmt(engine *e)
{
	__atomic_fetch_add(&e->mgmt_waiting, 1, __ATOMIC_RELAXED);
	pthread_mutex_lock(&e->lock);
	__atomic_fetch_sub(&e->mgmt_waiting, 1, __ATOMIC_RELAXED);
}

void engine_unlock_mgmt(engine *e)
{
	pthread_mutex_unlock(&e->lock);
}

int softnic_engines_start(softnic *nic)
{
	for (int i = 0; i < nic->attr.engine_threads; i++) {
		engine *e = &nic->engines[i];
		int rc = pthread_create(&e->thread, NULL, engine_main, e);

		if (rc) {
			softnic_set_error(nic, "engine %d: pthread_create: %s", i, strerror(rc));
			softnic_engines_stop(nic);
			errno = rc;
			return rc;
		}
		e->running = 1;
	}
	return 0;
}

void softnic_engines_stop(softnic *nic)
{
	__atomic_store_n(&nic->shared->stop, 1, __ATOMIC_RELEASE);
	for (int i = 0; i < nic->nengines; i++) {
		if (nic->engines[i].running) {
			pthread_join(nic->engines[i].thread, NULL);
			nic->engines[i].running = 0;
		}
	}
}

int softnic_progress(softnic *nic)
{
	int done = 0;

	if (nic->backend.state_alloc) /* another engine (the GPU's) owns the QPs */
		return nic->backend.progress ? nic->backend.progress(nic, nic->backend.ctx) : 0;
	for (int i = 0; i < nic->nengines; i++)
		done += engine_pass(&nic->engines[i]);
	return done;
}
