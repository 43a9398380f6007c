/* Two OpenMP threads: the master sweeps `a` once, says "ready" and waits at the team's barrier;
 * the other sweeps the 8 MiB `b` 40 times first. A termination signal sent once the master is ready
 * reaches the working thread's safe point first, while the master waits for it at the barrier
 * and makes no captured access until that thread arrives. */
#include <omp.h>
#include <stdio.h>

#define N 4096
#define NB (1 << 20)
double a[N], b[NB];

static void sweep(double *x, int n) {
  for (int i = 0; i < n; i++) x[i] += 1.0;
}

int main(void) {
#pragma omp parallel num_threads(2)
  {
    if (omp_get_thread_num() == 0) {
      sweep(a, N);
      printf("ready\n");
      fflush(stdout);
    } else {
      for (int r = 0; r < 40; r++) sweep(b, NB);
    }
#pragma omp barrier
    if (omp_get_thread_num() == 0) sweep(a, N);
  }
  return 0;
}
