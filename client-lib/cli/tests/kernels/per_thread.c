/* Two threads, each reading its own known part of a global array in one function region:
   thread 0 reads elements 0 to 999, thread 1 elements 4096 to 7095 (a per-thread request must
   give 1,000 and 3,000 reads, on distinct thread ids). Built with -O0: one 4-byte read each. */
#include <pthread.h>
#include <stdio.h>
#define N 8192

int data[N];
static const int first[2] = {0, 4096};
static const int count[2] = {1000, 3000};

__attribute__((noinline)) long touch(int from, int n) {
  long sum = 0;
  for (int i = from; i < from + n; i++) sum += data[i];
  return sum;
}

static void *work(void *arg) {
  long id = (long)arg;
  return (void *)touch(first[id], count[id]);
}

int main(void) {
  pthread_t threads[2];
  for (long t = 0; t < 2; t++) pthread_create(&threads[t], NULL, work, (void *)t);
  for (int t = 0; t < 2; t++) pthread_join(threads[t], NULL);
  printf("done\n");
  return 0;
}
