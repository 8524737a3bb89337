/*
 * mini-proxy worker cores: pinning, warm-up, and the core clock as Linux
 * reports it (paper App. C.1: cold and warm workers differ).
 */
#include <errno.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <time.h>

#include "proxy_internal.h"

int proxy_pin_self(int cpu)
{
	cpu_set_t set;

	if (cpu < 0 || cpu >= CPU_SETSIZE)
		return EINVAL;
	CPU_ZERO(&set);
	CPU_SET(cpu, &set);
	return pthread_setaffinity_np(pthread_self(), sizeof(set), &set);
}

int proxy_current_cpu(void)
{
	return sched_getcpu();
}

/* Keeps the calling core busy for ms milliseconds (or until *stop), so
 * that its clock leaves the idle state before the run. */
void proxy_spin_ms(int ms, const int *stop)
{
	uint64_t end = gic_now_ns() + (uint64_t)ms * 1000000ull;
	volatile uint64_t sink = 0;

	/* Relaxed: the stop flag only shortens the warm-up. */
	while (gic_now_ns() < end && !__atomic_load_n(stop, __ATOMIC_RELAXED)) {
		for (int i = 0; i < 1000; i++)
			sink += (uint64_t)i * 2654435761u;
	}
	(void)sink;
}

/* Leaves the calling core idle for ms milliseconds (or until *stop), in
 * sleeps of at most 10 ms: the paper's cold workers follow an idle period
 * (App. C.1: 45 s). */
void proxy_sleep_ms(int ms, const int *stop)
{
	uint64_t end = gic_now_ns() + (uint64_t)ms * 1000000ull;

	/* Relaxed: the stop flag only shortens the idle period. */
	for (;;) {
		uint64_t now = gic_now_ns(), left;
		struct timespec ts;

		if (now >= end || __atomic_load_n(stop, __ATOMIC_RELAXED))
			return;
		left = end - now < 10000000ull ? end - now : 10000000ull;
		ts.tv_sec = 0;
		ts.tv_nsec = (long)left;
		nanosleep(&ts, NULL);
	}
}

long proxy_cpu_mhz(int cpu)
{
	char path[96];
	long khz = -1;
	FILE *f;

	if (cpu < 0)
		return -1;
	snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu%d/cpufreq/scaling_cur_freq",
		 cpu);
	f = fopen(path, "r");
	if (!f)
		return -1;
	if (fscanf(f, "%ld", &khz) != 1 || khz <= 0)
		khz = -1;
	fclose(f);
	return khz < 0 ? -1 : (khz + 500) / 1000;
}
