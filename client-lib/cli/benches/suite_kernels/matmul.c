/* Hit-heavy: row-major i-k-j matrix multiply over globals, repeated. */
#include "common.h"
#define N 256
double A[N][N] SUITE_ALIGNED;
double B[N][N] SUITE_ALIGNED;
double C[N][N] SUITE_ALIGNED;

static void matmul(void) {
  for (int i = 0; i < N; i++)
    for (int k = 0; k < N; k++) {
      double r = A[i][k];
      for (int j = 0; j < N; j++) C[i][j] += r * B[k][j];
    }
}

int main(int argc, char **argv) {
  int reps = reps_of(argc, argv);
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++) {
      A[i][j] = (double)((i + j) % 7) * 0.5;
      B[i][j] = (double)((i * j) % 5) * 0.25;
    }
  for (int r = 0; r < reps; r++) matmul();
  double sum = 0.0;
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++) sum += C[i][j];
  printf("%.6e\n", sum);
  return 0;
}
