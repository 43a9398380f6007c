/* Two arrays allocated in one statement share their line's name; a third has a line of its own.
 * Lines matter: the test names the sites by line. */
#include <stdio.h>
#include <stdlib.h>

#define N 20000

__attribute__((noinline)) void sweep(double *x) { for (int i = 0; i < N; i++) x[i] += 1.0; }

int main(void) {
  double *a = malloc(N * sizeof *a), *b = malloc(N * sizeof *b);
  double *c = malloc(N * sizeof *c);
  for (int i = 0; i < N; i++) a[i] = b[i] = c[i] = i;
  sweep(a);
  sweep(b);
  sweep(c);
  printf("%.1f\n", a[1] + b[1] + c[1]);
  free(a);
  free(b);
  free(c);
  return 0;
}
