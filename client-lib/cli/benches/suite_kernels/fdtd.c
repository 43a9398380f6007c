/* FDTD-like: the 2-D update of three fields, each from the others' neighbours. */
#include "common.h"
#define NX 1000
#define NY 1000
double ex[NX][NY] SUITE_ALIGNED;
double ey[NX][NY] SUITE_ALIGNED;
double hz[NX][NY] SUITE_ALIGNED;

int main(int argc, char **argv) {
  int reps = reps_of(argc, argv);
  for (int i = 0; i < NX; i++)
    for (int j = 0; j < NY; j++) {
      ex[i][j] = (double)(i * (j + 1)) / NX;
      ey[i][j] = (double)(i * (j + 2)) / NY;
      hz[i][j] = (double)(i * (j + 3)) / NX;
    }
  for (int t = 0; t < reps; t++) {
    for (int j = 0; j < NY; j++) ey[0][j] = (double)t;
    for (int i = 1; i < NX; i++)
      for (int j = 0; j < NY; j++) ey[i][j] = ey[i][j] - 0.5 * (hz[i][j] - hz[i - 1][j]);
    for (int i = 0; i < NX; i++)
      for (int j = 1; j < NY; j++) ex[i][j] = ex[i][j] - 0.5 * (hz[i][j] - hz[i][j - 1]);
    for (int i = 0; i < NX - 1; i++)
      for (int j = 0; j < NY - 1; j++)
        hz[i][j] = hz[i][j] - 0.7 * (ex[i][j + 1] - ex[i][j] + ey[i + 1][j] - ey[i][j]);
  }
  double sum = 0.0;
  for (int i = 0; i < NX; i++)
    for (int j = 0; j < NY; j++) sum += hz[i][j];
  printf("%.6e\n", sum);
  return 0;
}
