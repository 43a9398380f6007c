/* Two threads take turns, ROUNDS times each: turn k is thread k % 2's, which runs `turn` once
 * (LINES reads and writes of its own row of `cells`), while the other thread runs `tick` (one
 * read and write of its word of `ticks`) over and over until the turn is over; then both meet
 * at a barrier. A tool that halts at `turn`'s exit sees the ticking thread stop at its next
 * boundary (its tick count stays put while the halt lasts), see step_threads.rs. */
#include <pthread.h>
#include <stdio.h>

#define ROUNDS 3
#define LINES 16

long cells[2][LINES * 8] __attribute__((aligned(64)));
volatile long ticks[2][8] __attribute__((aligned(64)));
static int turns_done;
static pthread_barrier_t barrier;

__attribute__((noinline)) void turn(long t) {
  for (int i = 0; i < LINES; i++) cells[t][i * 8] += 1;
}

__attribute__((noinline)) void tick(long t) { ticks[t][0] += 1; }

void *take_turns(void *arg) {
  long t = (long)arg;
  for (int k = 0; k < 2 * ROUNDS; k++) {
    if (k % 2 == t) {
      turn(t);
      __atomic_store_n(&turns_done, k + 1, __ATOMIC_RELEASE);
    } else {
      while (__atomic_load_n(&turns_done, __ATOMIC_ACQUIRE) <= k) tick(t);
    }
    pthread_barrier_wait(&barrier);
  }
  return NULL;
}

int main(void) {
  pthread_t threads[2];
  pthread_barrier_init(&barrier, NULL, 2);
  for (long t = 0; t < 2; t++) pthread_create(&threads[t], NULL, take_turns, (void *)t);
  for (long t = 0; t < 2; t++) pthread_join(threads[t], NULL);
  printf("%ld %ld\n", cells[0][0], cells[1][0]);
  return 0;
}
