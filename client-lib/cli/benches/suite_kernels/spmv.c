/* Sparse gather: CSR matrix-vector product, 27 entries a row (a 3-D stencil's matrix). */
#include "common.h"
#define ROWS 200000
#define PER 27
double val[ROWS * PER] SUITE_ALIGNED;
double x[ROWS] SUITE_ALIGNED;
double y[ROWS] SUITE_ALIGNED;
int col[ROWS * PER] SUITE_ALIGNED;
int rowptr[ROWS + 1] SUITE_ALIGNED;

static void spmv(void) {
  for (int i = 0; i < ROWS; i++) {
    double s = 0.0;
    for (int k = rowptr[i]; k < rowptr[i + 1]; k++) s += val[k] * x[col[k]];
    y[i] = s;
  }
}

int main(int argc, char **argv) {
  int reps = reps_of(argc, argv);
  int nx = 60, plane = 60 * 60;
  for (int i = 0; i < ROWS; i++) {
    rowptr[i] = i * PER;
    x[i] = 1.0 + (i % 3);
    int k = 0;
    for (int dz = -1; dz <= 1; dz++)
      for (int dy = -1; dy <= 1; dy++)
        for (int dx = -1; dx <= 1; dx++) {
          long c = (long)i + dz * plane + dy * nx + dx;
          c = (c + ROWS) % ROWS;
          col[i * PER + k] = (int)c;
          val[i * PER + k] = 1.0 / (1 + k);
          k++;
        }
  }
  rowptr[ROWS] = ROWS * PER;
  for (int r = 0; r < reps; r++) spmv();
  double sum = 0.0;
  for (int i = 0; i < ROWS; i++) sum += y[i];
  printf("%.6e\n", sum);
  return 0;
}
