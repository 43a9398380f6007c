/* Built without capture; see pipeline_lazy_worker.c. */
#include <pthread.h>
#include <stdlib.h>

#define N 8192

pthread_barrier_t written, freed;
void *worker(void *);

int main(void) {
  pthread_barrier_init(&written, 0, 2);
  pthread_barrier_init(&freed, 0, 2);
  double *a = aligned_alloc(64, N * sizeof(double));
  if (!a) return 2;
  pthread_t t;
  if (pthread_create(&t, 0, worker, a) != 0) return 3;
  pthread_barrier_wait(&written);
  free(a);
  pthread_barrier_wait(&freed);
  pthread_join(t, 0);
  return 0;
}
