/* Heap arrays of an unmodified program: malloc, calloc and realloc blocks, named by their
   allocation sites. Lines matter: the test names the sites by line. */
#include <stdio.h>
#include <stdlib.h>
#define N 200
void sweep(double *x, int n) { for (int i = 0; i < n; i++) x[i] += 1.0; }
int main(void) {
  double *x = malloc(N * N * sizeof(double));
  double *small = malloc(64);
  for (int i = 0; i < N * N; i++) x[i] = i;
  sweep(x, N * N);
  small[0] = x[5];
  printf("%f\n", small[0] + x[N]);
  free(x);
  double *y = calloc(N * N, sizeof(double));
  sweep(y, N * N);
  y = realloc(y, 2 * N * N * sizeof(double));
  sweep(y, 2 * N * N);
  free(y);
  free(small);
  return 0;
}
