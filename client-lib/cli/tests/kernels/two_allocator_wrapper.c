/* A wrapper the default rule does not see through (two allocator calls: an aligned block, or
 * a plain one when that fails) allocates both arrays: its line names them together until
 * EPCACHE_ALLOC_WRAPPERS names it (see alloc_contexts.rs). */
#include <stdio.h>
#include <stdlib.h>

#define N 10000

__attribute__((noinline)) double *grab(size_t n) {
  double *p = aligned_alloc(64, n * sizeof(double));
  if (!p) p = malloc(n * sizeof(double));
  return p;
}

int main(void) {
  double *a = grab(N);
  double *b = grab(N);
  for (int i = 0; i < N; i++) a[i] = b[i] = i;
  double s = 0;
  for (int i = 0; i < N; i++) s += a[i] * b[i];
  printf("%.1f\n", s > 0 ? 3.0 : 0.0);
  free(a);
  free(b);
  return 0;
}
