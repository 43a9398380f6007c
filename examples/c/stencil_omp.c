/* A Jacobi relaxation of a 2D grid shared out among OpenMP threads by rows: whether the grid
 * stays in the last level depends on whether that level is one cache the cores share or a
 * cache per core. The two grids take 2 x N x N doubles; with a last level of three quarters of
 * that, one shared copy thrashes at every sweep while two private copies each hold their
 * thread's half:
 *
 *   epcache cc -- gcc -O1 -fopenmp -o stencil_omp examples/c/stencil_omp.c
 *   epcache run --cores 2 --all-regions --cache 'D1=8K,8,64;L2=32K,8,64;L3=192K,12,64,shared' -- ./stencil_omp
 *   epcache run --cores 2 --all-regions --cache 'D1=8K,8,64;L2=32K,8,64;L3=192K,12,64' -- ./stencil_omp
 *
 * `stencil_omp SWEEPS` runs that many sweeps (default 4). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#define N 128
double grid[N][N] __attribute__((aligned(64)));
double next[N][N] __attribute__((aligned(64)));

void relax(void) {
#pragma omp parallel for num_threads(2) schedule(static)
  for (int i = 1; i < N - 1; i++)
    for (int j = 1; j < N - 1; j++)
      next[i][j] = 0.25 * (grid[i - 1][j] + grid[i + 1][j] + grid[i][j - 1] + grid[i][j + 1]);
}

void copy_back(void) {
#pragma omp parallel for num_threads(2) schedule(static)
  for (int i = 1; i < N - 1; i++)
    for (int j = 1; j < N - 1; j++) grid[i][j] = next[i][j];
}

int main(int argc, char **argv) {
  int sweeps = argc > 1 ? atoi(argv[1]) : 4;
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++) grid[i][j] = (i == 0) ? 1.0 : 0.0;
  for (int s = 0; s < sweeps; s++) {
    relax();
    copy_back();
  }
  /* Heat flows in from the top edge only: row 1 warms, nothing goes negative. */
  if (!(grid[1][N / 2] > 0.0) || grid[N - 2][N / 2] < 0.0) {
    fprintf(stderr, "wrong relaxation\n");
    return 1;
  }
  printf("%.6f\n", grid[1][N / 2]);
  return 0;
}
