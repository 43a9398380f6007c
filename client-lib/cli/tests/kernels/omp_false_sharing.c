/* Two OpenMP threads each add 1 to a counter of their own, N times. In `count_packed` the two
 * counters sit side by side in one cache line: every write takes the line from the other
 * thread's core although neither reads the other's counter (false sharing). In
 * `count_padded` each counter has a line of its own, the usual fix. In `count_shared` both
 * threads add to one counter under a lock (true sharing). */
#include <omp.h>
#include <stdio.h>

#define N 200000
#define SHARED_N 20000

volatile long packed[2] __attribute__((aligned(64)));

struct padded_counter {
  volatile long value;
  char pad[64 - sizeof(long)];
};
struct padded_counter padded[2] __attribute__((aligned(64)));

volatile long shared_total __attribute__((aligned(64)));

void count_packed(void) {
#pragma omp parallel num_threads(2)
  {
    int t = omp_get_thread_num();
    for (long i = 0; i < N; i++) packed[t] += 1;
  }
}

void count_padded(void) {
#pragma omp parallel num_threads(2)
  {
    int t = omp_get_thread_num();
    for (long i = 0; i < N; i++) padded[t].value += 1;
  }
}

void count_shared(void) {
#pragma omp parallel num_threads(2)
  for (long i = 0; i < SHARED_N; i++) {
#pragma omp critical
    shared_total += 1;
  }
}

int main(void) {
  count_packed();
  count_padded();
  count_shared();
  printf("%ld %ld %ld\n", packed[0] + packed[1], padded[0].value + padded[1].value,
         shared_total);
  return 0;
}
