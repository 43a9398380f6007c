/* Two heap arrays from two allocation sites, the second at the first's address once the first
 * is freed, each written once: 8192 writes each. With the repeat-hit filter off (an inclusive
 * LL), whole-line ranges remembered under the first array outlived its free, and the second's
 * writes went to the first. */
#include <stdlib.h>

#define N 8192

__attribute__((noinline)) void fill(double *p) {
  for (int i = 0; i < N; i++) p[i] = i;
}

__attribute__((noinline)) double *first(void) { return aligned_alloc(64, N * sizeof(double)); }

__attribute__((noinline)) double *second(void) { return aligned_alloc(64, N * sizeof(double)); }

int main(void) {
  double *p = first();
  if (!p) return 2;
  fill(p);
  free(p);
  double *q = second();
  if (!q) return 3;
  fill(q);
  free(q);
  return 0;
}
