/* Two threads each call `tick` TICKS times, side by side, so both cross region boundaries
 * all the time and often at the same moment; `never` is never called. A tool that steps to
 * the next boundary over and over sees exactly one halt per step (see step_threads.rs). */
#include <pthread.h>
#include <stdio.h>

#define TICKS 20000000

volatile long ticks[2][8] __attribute__((aligned(64)));

__attribute__((noinline)) void tick(long t) { ticks[t][0] += 1; }

__attribute__((noinline)) void never(void) { ticks[0][1] += 1; }

void *keep_ticking(void *arg) {
  long t = (long)arg;
  for (long i = 0; i < TICKS; i++) tick(t);
  return NULL;
}

int main(int argc, char **argv) {
  (void)argv;
  pthread_t threads[2];
  for (long t = 0; t < 2; t++) pthread_create(&threads[t], NULL, keep_ticking, (void *)t);
  for (long t = 0; t < 2; t++) pthread_join(threads[t], NULL);
  if (argc > 5) never();
  printf("%ld %ld\n", ticks[0][0], ticks[1][0]);
  return 0;
}
