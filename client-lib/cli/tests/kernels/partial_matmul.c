/* Naive matrix multiply in a function of its own, for partial traces: every data reference of
 * `multiply` is regular (A along rows, B down columns, C once per (i, j)). */
#include <stdio.h>
#define N 48
double a[N][N], b[N][N], c[N][N];

__attribute__((noinline)) void multiply(void) {
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++) {
      double s = c[i][j];
      for (int k = 0; k < N; k++) s += a[i][k] * b[k][j];
      c[i][j] = s;
    }
}

int main(void) {
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++) {
      a[i][j] = i + j;
      b[i][j] = i - j;
    }
  multiply();
  double sum = 0.0;
  for (int i = 0; i < N; i++) sum += c[i][i];
  printf("%.1f\n", sum);
  return 0;
}
