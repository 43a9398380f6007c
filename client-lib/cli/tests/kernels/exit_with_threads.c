/* The program ends with two threads it never joined, both inside instrumented functions: one
 * keeps sweeping X, the other swept Y once and then blocks in the C library, reading a pipe
 * nobody writes. main waits until X was swept ten times and Y once, prints how many sweeps of
 * X it saw finished, and returns. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <unistd.h>

double X[4096], Y[4096];
static atomic_int rounds, y_swept;
static int never_written[2];

void sweep_x(void) {
  for (int i = 0; i < 4096; i++) X[i] += 1.0;
}

void sweep_y_then_block(void) {
  for (int i = 0; i < 4096; i++) Y[i] += 1.0;
  atomic_store(&y_swept, 1);
  char c;
  (void)!read(never_written[0], &c, 1);
}

static void *runner(void *arg) {
  (void)arg;
  for (;;) {
    sweep_x();
    atomic_fetch_add(&rounds, 1);
  }
  return NULL;
}

static void *blocker(void *arg) {
  (void)arg;
  sweep_y_then_block();
  return NULL;
}

int main(void) {
  if (pipe(never_written) != 0) return 2;
  pthread_t a, b;
  if (pthread_create(&a, NULL, runner, NULL) != 0) return 2;
  if (pthread_create(&b, NULL, blocker, NULL) != 0) return 2;
  while (atomic_load(&rounds) < 10 || !atomic_load(&y_swept)) usleep(1000);
  printf("%d\n", atomic_load(&rounds));
  return 0;
}
