/* A thread writes a heap array, then the main thread frees it while the writer's last line
 * visits are still batched (or staged for the simulation thread), then the writer accesses
 * memory again. Every write happened before the free, so all LINES * 8 count for the array:
 * attributing them when they were simulated, after the free, lost them (the last 256 lines,
 * or all of them when staged). */
#include <pthread.h>
#include <stdlib.h>

#define LINES 8000

double *X;
double after[64];
pthread_barrier_t filled, freed;

static void *fill(void *arg) {
  for (long k = 0; k < LINES * 8L; k++) X[k] = (double)k;
  pthread_barrier_wait(&filled);
  pthread_barrier_wait(&freed);
  for (int k = 0; k < 64; k++) after[k] = (double)k;
  return arg;
}

int main(void) {
  X = aligned_alloc(64, LINES * 64);
  if (!X) return 2;
  pthread_barrier_init(&filled, 0, 2);
  pthread_barrier_init(&freed, 0, 2);
  pthread_t writer;
  if (pthread_create(&writer, 0, fill, 0) != 0) return 3;
  pthread_barrier_wait(&filled);
  free(X);
  pthread_barrier_wait(&freed);
  pthread_join(writer, 0);
  return 0;
}
