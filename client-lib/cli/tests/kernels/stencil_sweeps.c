/* A 2-D five-point stencil over two global grids, swept `argv[1]` times (default 4), read along
 * rows: most accesses repeat a hit on their L1 set's most recent line, whatever the line size.
 * Built without vectorisation by the tests that compare it with Cachegrind, so both see the
 * same scalar accesses. */
#include <stdio.h>
#include <stdlib.h>
#define N 256
/* Page-aligned, so where the grids fall in cache lines (up to 4 KiB) does not depend on how
 * much code and data the build links before them: builds that count alike must see the same
 * conflicts. */
double a[N][N] __attribute__((aligned(4096)));
double b[N][N] __attribute__((aligned(4096)));

__attribute__((noinline)) void sweep(double (*src)[N], double (*dst)[N]) {
  for (int i = 1; i < N - 1; i++)
    for (int j = 1; j < N - 1; j++)
      dst[i][j] = 0.2 * (src[i][j] + src[i - 1][j] + src[i + 1][j] + src[i][j - 1] + src[i][j + 1]);
}

int main(int argc, char **argv) {
  int sweeps = argc > 1 ? atoi(argv[1]) : 4;
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++) a[i][j] = b[i][j] = (double)((i * 31 + j * 17) % 101);
  for (int t = 0; t < sweeps; t++) {
    sweep(a, b);
    sweep(b, a);
  }
  double sum = 0.0;
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++) sum += a[i][j];
  printf("%.6e\n", sum);
  return 0;
}
