/* A JACK client for pipewire_test.go, run under pipewire-jack (pw-jack):
 * it copies its input to its output each cycle and, once armed by SIGUSR1,
 * spins STALL_US microseconds in every EVERY-th cycle, COUNT times, then
 * says "done" on stderr and goes on without stalling. It also says on
 * stderr when, by its own clock, a cycle of its came late without a stall
 * of its own ("late woke US": it began more than 1 ms after the cycle's
 * start; "late gap US": more than 1.5 cycles after its previous one; "late
 * ran US": it ran over 1 ms): the machine's doing, which the test
 * holds against the profile's charges to it.
 * usage: stall NAME EVERY STALL_US COUNT (EVERY 0: never stalls) */
#include <jack/jack.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static long every, stall_us, count;
static volatile sig_atomic_t armed;
static unsigned long n, stalls;
static jack_port_t *in, *out;
static jack_client_t *client;
static jack_time_t prev;
static int after_stall;

static void arm(int sig) { (void)sig; armed = 1; }

static long since_us(const struct timespec *t0)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return (t.tv_sec - t0->tv_sec) * 1000000L + (t.tv_nsec - t0->tv_nsec) / 1000;
}

static int process(jack_nframes_t nf, void *arg)
{
	jack_time_t now = jack_get_time(), cur, next;
	jack_nframes_t frames;
	float usecs;
	float *i = jack_port_get_buffer(in, nf), *o = jack_port_get_buffer(out, nf);
	(void)arg;
	if (!after_stall && jack_get_cycle_times(client, &frames, &cur, &next, &usecs) == 0) {
		if (now > cur + 1000)
			fprintf(stderr, "late woke %ld\n", (long)(now - cur));
		else if (prev && now - prev > (next - cur) * 3 / 2)
			fprintf(stderr, "late gap %ld\n", (long)(now - prev));
	}
	after_stall = 0;
	prev = now;
	memcpy(o, i, nf * sizeof(float));
	if (!armed || every <= 0 || (long)stalls >= count || ++n % every != 0) {
		jack_time_t end = jack_get_time();
		if (end - now > 1000)
			fprintf(stderr, "late ran %ld\n", (long)(end - now));
		return 0;
	}
	struct timespec t0;
	clock_gettime(CLOCK_MONOTONIC, &t0);
	while (since_us(&t0) < stall_us)
		;
	stalls++;
	after_stall = 1;
	fprintf(stderr, "stall %lu\n", stalls);
	if ((long)stalls == count)
		fprintf(stderr, "done\n");
	return 0;
}

int main(int argc, char **argv)
{
	if (argc != 5) {
		fprintf(stderr, "usage: stall NAME EVERY STALL_US COUNT\n");
		return 2;
	}
	every = atol(argv[2]);
	stall_us = atol(argv[3]);
	count = atol(argv[4]);
	signal(SIGUSR1, arm);
	jack_client_t *c = client = jack_client_open(argv[1], JackNoStartServer, NULL);
	if (!c) {
		fprintf(stderr, "jack_client_open failed\n");
		return 1;
	}
	in = jack_port_register(c, "in", JACK_DEFAULT_AUDIO_TYPE, JackPortIsInput, 0);
	out = jack_port_register(c, "out", JACK_DEFAULT_AUDIO_TYPE, JackPortIsOutput, 0);
	jack_set_process_callback(c, process, NULL);
	if (jack_activate(c)) {
		fprintf(stderr, "jack_activate failed\n");
		return 1;
	}
	printf("ready\n");
	fflush(stdout);
	for (;;)
		pause();
}
