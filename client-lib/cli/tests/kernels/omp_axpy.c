/* An OpenMP kernel: libgomp's worker threads run the parallel loops and stay alive, idle in
 * its pool, until the process exits, after the report is written. `touch_small` runs twice
 * over an array that fits in L1, with the same static schedule: each thread's second pass
 * hits the lines its first one brought in. */
#include <stdio.h>

#define N 1000000
double a[N], b[N];
#define SMALL 2048
double small[SMALL] __attribute__((aligned(64)));

void axpy(double s) {
#pragma omp parallel for
  for (int i = 0; i < N; i++) a[i] += s * b[i];
}

void touch_small(void) {
#pragma omp parallel for schedule(static)
  for (int i = 0; i < SMALL; i++) small[i] += 1.0;
}

int main(void) {
  for (int i = 0; i < N; i++) {
    a[i] = i;
    b[i] = 1.0;
  }
  axpy(2.0);
  touch_small();
  touch_small();
  double t = 0.0;
  for (int i = 0; i < N; i++) t += a[i];
  printf("%.0f\n", t);
  return 0;
}
