/* Arrays allocated two to a line: a statement the runtime reads (`c`, `d`: each named by its
 * own name and the line) and one it cannot (a macro: both share the line's name, which the
 * report marks). Lines matter: the test names the sites by line. */
#include <stdio.h>
#include <stdlib.h>

#define N 20000
#define ALLOC(p) ((p) = malloc(N * sizeof *(p)))

__attribute__((noinline)) void sweep(double *x) { for (int i = 0; i < N; i++) x[i] += 1.0; }

int main(void) {
  double *a, *b;
  ALLOC(a); ALLOC(b);
  double *c = malloc(N * sizeof *c), *d = malloc(N * sizeof *d);
  for (int i = 0; i < N; i++) a[i] = b[i] = c[i] = d[i] = i;
  sweep(a);
  sweep(b);
  sweep(c);
  sweep(d);
  sweep(d);
  printf("%.1f\n", a[1] + b[1] + c[1] + d[1]);
  free(a);
  free(b);
  free(c);
  free(d);
  return 0;
}
