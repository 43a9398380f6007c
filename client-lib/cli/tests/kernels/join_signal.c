/* The main thread sweeps X, then starts a worker that sweeps Y until a signal ends the
 * program, and blocks joining it: the report, written by the worker, must still have the main
 * thread's sweep of X. Says "ready" once the worker runs. */
#include <pthread.h>
#include <stdio.h>

double X[4096], Y[4096];

void sweep_x(void) {
  for (int i = 0; i < 4096; i++) X[i] += 1.0;
}

void sweep_y(void) {
  for (int i = 0; i < 4096; i++) Y[i] += 1.0;
}

static void *worker(void *arg) {
  (void)arg;
  sweep_y();
  printf("ready\n");
  fflush(stdout);
  for (;;) sweep_y();
  return NULL;
}

int main(void) {
  sweep_x();
  pthread_t thread;
  if (pthread_create(&thread, NULL, worker, NULL) != 0) return 2;
  pthread_join(thread, NULL);
  return 0;
}
