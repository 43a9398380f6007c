/* Gauss elimination as in the EP-Cache paper (100x100 REAL), original and optimised loop
   orders, with a marker region around each elimination. */
#include <stdio.h>
#include "epcache.h"
#define N 100
float A[N][N];

static void init(void) {
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++)
      A[i][j] = (i == j) ? (float)N : 1.0f / (float)(1 + i + j);
}

void original(void) {
  for (int k = 0; k < N - 1; k++)
    for (int j = k + 1; j < N; j++)
      for (int i = k + 1; i < N; i++)
        A[i][j] -= A[i][k] * A[k][j] / A[k][k];
}

void optimised(void) {
  for (int k = 0; k < N - 1; k++)
    for (int i = k + 1; i < N; i++)
      for (int j = k + 1; j < N; j++)
        A[i][j] -= A[i][k] * A[k][j] / A[k][k];
}

int main(void) {
  init();
  EPCACHE_REGION_BEGIN("elimination");
  original();
  EPCACHE_REGION_END();
  init();
  EPCACHE_REGION_BEGIN("elimination_optimised");
  optimised();
  EPCACHE_REGION_END();
  printf("%.3f\n", A[N - 1][N - 1]);
  return 0;
}
