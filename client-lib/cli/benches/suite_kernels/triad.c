/* Streaming: STREAM's triad over arrays far larger than every cache. */
#include "common.h"
#define LEN (2 * 1024 * 1024)
double a[LEN] SUITE_ALIGNED;
double b[LEN] SUITE_ALIGNED;
double c[LEN] SUITE_ALIGNED;

int main(int argc, char **argv) {
  int reps = reps_of(argc, argv);
  for (long i = 0; i < LEN; i++) {
    b[i] = (double)(i % 1000);
    c[i] = (double)(i % 77);
  }
  for (int r = 0; r < reps; r++) {
    double s = 1.0 + r * 1e-3;
    for (long i = 0; i < LEN; i++) a[i] = b[i] + s * c[i];
  }
  double sum = 0.0;
  for (long i = 0; i < LEN; i++) sum += a[i];
  printf("%.6e\n", sum);
  return 0;
}
