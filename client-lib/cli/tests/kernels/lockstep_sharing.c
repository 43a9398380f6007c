/* Two threads take turns under a barrier, ROUNDS times: in its turn, thread t adds 1 to its
 * own word of `packed` (the two words share one line) and to `same` (one word both add to),
 * while the other thread waits at the barrier. The interleaving is fixed, so every coherence
 * event can be counted by hand (see threads_coherence.rs). */
#include <pthread.h>
#include <stdio.h>

#define ROUNDS 500

long packed[2] __attribute__((aligned(64)));
long same __attribute__((aligned(64)));
static pthread_barrier_t barrier;

void *take_turns(void *arg) {
  long t = (long)arg;
  for (int round = 0; round < ROUNDS; round++) {
    for (long turn = 0; turn < 2; turn++) {
      if (turn == t) {
        packed[t] += 1;
        same += 1;
      }
      pthread_barrier_wait(&barrier);
    }
  }
  return NULL;
}

int main(void) {
  pthread_t threads[2];
  pthread_barrier_init(&barrier, NULL, 2);
  for (long t = 0; t < 2; t++) pthread_create(&threads[t], NULL, take_turns, (void *)t);
  for (long t = 0; t < 2; t++) pthread_join(threads[t], NULL);
  printf("%ld %ld %ld\n", packed[0], packed[1], same);
  return 0;
}
