/* False sharing and its fix, the classic OpenMP case: each thread adds to a counter of its
 * own, N times. In `count_packed` the counters sit side by side in one cache line, so every
 * write takes the line from the core that wrote last, although no thread reads another's
 * counter; in `count_padded` each counter has a line of its own. Run with two threads as two
 * cores of one machine and compare EPC_L1_FSM (false-sharing misses) of `packed` and `padded`:
 *
 *   epcache cc -- gcc -O1 -fopenmp -o false_sharing examples/c/false_sharing.c
 *   epcache run --cores 2 --all-regions -- ./false_sharing
 *
 * The additions come in rounds of ROUND that end at a barrier, as an iterative solver's sweeps
 * do: the line then changes hands at least once a round however the host schedules the
 * threads (while both run side by side, at nearly every write).
 *
 * `false_sharing N` runs N additions per thread (default 200000, a multiple of ROUND). */
#include <omp.h>
#include <stdio.h>
#include <stdlib.h>

#define THREADS 2
#define LINE 64
#define ROUND 100

/* `volatile`: every addition is a load and a store, as a counter updated through a pointer
 * the compiler cannot keep in a register would be. */
volatile long packed[THREADS] __attribute__((aligned(LINE)));

struct padded_counter {
  volatile long value;
  char pad[LINE - sizeof(long)];
};
struct padded_counter padded[THREADS] __attribute__((aligned(LINE)));

void count_packed(long n) {
#pragma omp parallel num_threads(THREADS)
  {
    int t = omp_get_thread_num();
    for (long r = 0; r < n / ROUND; r++) {
      for (long i = 0; i < ROUND; i++) packed[t] += 1;
#pragma omp barrier
    }
  }
}

void count_padded(long n) {
#pragma omp parallel num_threads(THREADS)
  {
    int t = omp_get_thread_num();
    for (long r = 0; r < n / ROUND; r++) {
      for (long i = 0; i < ROUND; i++) padded[t].value += 1;
#pragma omp barrier
    }
  }
}

int main(int argc, char **argv) {
  long n = argc > 1 ? atol(argv[1]) / ROUND * ROUND : 200000;
  count_packed(n);
  count_padded(n);
  long total_packed = 0, total_padded = 0;
  for (int t = 0; t < THREADS; t++) {
    total_packed += packed[t];
    total_padded += padded[t].value;
  }
  printf("packed %ld padded %ld\n", total_packed, total_padded);
  if (total_packed != THREADS * n || total_padded != THREADS * n) {
    fprintf(stderr, "wrong sums\n");
    return 1;
  }
  return 0;
}
