/* A caller that keeps its loop counter in r11 across calls to a local function: gcc -O2 with
 * interprocedural register allocation does so here (the 2 MiB-aligned grids change its choice),
 * and a dual build whose copy-choosing entry uses r11 must not reset it (epcache cc passes
 * -fno-ipa-ra). */
#include "suite_common.h"
#define N 1024
double a[N][N] SUITE_ALIGNED;
double b[N][N] SUITE_ALIGNED;

static void sweep(double (*src)[N], double (*dst)[N]) {
  for (int i = 1; i < N - 1; i++)
    for (int j = 1; j < N - 1; j++)
      dst[i][j] = 0.2 * (src[i][j] + src[i - 1][j] + src[i + 1][j] + src[i][j - 1] + src[i][j + 1]);
}

int main(int argc, char **argv) {
  int reps = reps_of(argc, argv);
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++) a[i][j] = b[i][j] = (double)((i * 31 + j * 17) % 101);
  for (int t = 0; t < reps; t++) {
    sweep(a, b);
    sweep(b, a);
  }
  double sum = 0.0;
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++) sum += a[i][j];
  printf("%.6e\n", sum);
  return 0;
}
