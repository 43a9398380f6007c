/* Built with capture and linked with pipeline_lazy_main.c, which is not: the worker is the
 * process's only capturing thread, so its first batches go to the simulation thread. It writes
 * the array main allocated, then main frees it, then the worker accesses memory again. Its
 * finders took their snapshot of the data structures at their first search, on the
 * simulation thread after the free, and its 8192 writes were counted for nothing. */
#include <pthread.h>

#define N 8192

extern pthread_barrier_t written, freed;
static volatile double sink;

void *worker(void *arg) {
  double *x = arg;
  for (int i = 0; i < N; i++) x[i] = i;
  pthread_barrier_wait(&written);
  pthread_barrier_wait(&freed);
  sink = 1;
  return 0;
}
