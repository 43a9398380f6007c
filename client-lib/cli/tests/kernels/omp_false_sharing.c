/* Two OpenMP threads each add 1 to a counter of their own, N times, in rounds of ROUND
 * additions that end at a barrier (as an iterative solver's sweeps do). In `count_packed` the
 * two counters sit side by side in one cache line: every write takes the line from the other
 * thread's core although neither reads the other's counter (false sharing). In `count_padded`
 * each counter has a line of its own, the usual fix. In `count_shared` both threads add to one
 * counter under a lock (true sharing). The barriers make the line change hands at least once
 * a round however the host schedules the threads; while both run, it changes at nearly every
 * write. */
#include <omp.h>
#include <stdio.h>

#define N 200000
#define SHARED_N 20000
#define ROUND 100

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
    for (long r = 0; r < N / ROUND; r++) {
      for (long i = 0; i < ROUND; i++) packed[t] += 1;
#pragma omp barrier
    }
  }
}

void count_padded(void) {
#pragma omp parallel num_threads(2)
  {
    int t = omp_get_thread_num();
    for (long r = 0; r < N / ROUND; r++) {
      for (long i = 0; i < ROUND; i++) padded[t].value += 1;
#pragma omp barrier
    }
  }
}

void count_shared(void) {
#pragma omp parallel num_threads(2)
  for (long r = 0; r < SHARED_N / ROUND; r++) {
    for (long i = 0; i < ROUND; i++) {
#pragma omp critical
      shared_total += 1;
    }
#pragma omp barrier
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
