/* Transposed access: a row-major array read down its columns into another's rows. */
#include "common.h"
#define N 1536
double a[N][N] SUITE_ALIGNED;
double b[N][N] SUITE_ALIGNED;

int main(int argc, char **argv) {
  int reps = reps_of(argc, argv);
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++) a[i][j] = (double)((i ^ j) & 63);
  for (int r = 0; r < reps; r++)
    for (int j = 0; j < N; j++)
      for (int i = 0; i < N; i++) b[j][i] = a[i][j] + (double)r;
  double sum = 0.0;
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++) sum += b[i][j];
  printf("%.6e\n", sum);
  return 0;
}
