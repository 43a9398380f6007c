/* Heap arrays from the aligned allocators, named by their allocation sites. Lines matter: the
   test names the sites by line. */
#include <errno.h>
#include <malloc.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#define N 20000
void sweep(double *x, int n) { for (int i = 0; i < n; i++) x[i] += 1.0; }
int main(void) {
  double *a = NULL;
  int got = posix_memalign((void **)&a, 64, N * sizeof(double));
  double *b = aligned_alloc(256, N * sizeof(double));
  double *c = memalign(4096, N * sizeof(double));
  double *d = valloc(N * sizeof(double));
  double *e = pvalloc(N * sizeof(double));
  void *refused = NULL;
  int bad = posix_memalign(&refused, 24, 8192);
  if (got != 0 || !b || !c || !d || !e) return 1;
  for (int i = 0; i < N; i++) a[i] = b[i] = c[i] = d[i] = e[i] = i;
  sweep(a, N);
  sweep(b, N);
  sweep(c, N);
  sweep(d, N);
  sweep(e, N);
  printf("aligned %d %d %d %d refused %d %d\n", (uintptr_t)a % 64 == 0,
         (uintptr_t)b % 256 == 0, (uintptr_t)c % 4096 == 0, (uintptr_t)d % 4096 == 0,
         bad == EINVAL, refused == NULL);
  printf("%f\n", a[1] + b[2] + c[3] + d[4] + e[5]);
  free(a);
  free(b);
  free(c);
  free(d);
  free(e);
  return 0;
}
