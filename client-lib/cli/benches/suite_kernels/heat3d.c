/* Miss-heavy: 3-D seven-point heat equation over two grids. */
#include "common.h"
#define N 128
double u[N][N][N] SUITE_ALIGNED;
double v[N][N][N] SUITE_ALIGNED;

static void step(double (*src)[N][N], double (*dst)[N][N]) {
  for (int i = 1; i < N - 1; i++)
    for (int j = 1; j < N - 1; j++)
      for (int k = 1; k < N - 1; k++)
        dst[i][j][k] = src[i][j][k] + 0.1 * (src[i - 1][j][k] + src[i + 1][j][k] + src[i][j - 1][k] +
                                            src[i][j + 1][k] + src[i][j][k - 1] + src[i][j][k + 1] -
                                            6.0 * src[i][j][k]);
}

int main(int argc, char **argv) {
  int reps = reps_of(argc, argv);
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++)
      for (int k = 0; k < N; k++) u[i][j][k] = v[i][j][k] = (double)((i + 2 * j + 3 * k) % 13);
  for (int t = 0; t < reps; t++) {
    step(u, v);
    step(v, u);
  }
  double sum = 0.0;
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++)
      for (int k = 0; k < N; k++) sum += u[i][j][k];
  printf("%.6e\n", sum);
  return 0;
}
