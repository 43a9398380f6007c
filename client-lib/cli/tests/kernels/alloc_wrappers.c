/* Three arrays from one allocation wrapper at three call sites; with -DTWO_LEVEL the wrapper
 * goes through a second one (xmalloc); WRAPPER_ATTR is noinline or nothing (let it inline). */
#include <stdio.h>
#include <stdlib.h>

#ifndef WRAPPER_ATTR
#define WRAPPER_ATTR __attribute__((noinline))
#endif
#define N 20000

WRAPPER_ATTR static void *xmalloc(size_t bytes) {
    void *p = malloc(bytes);
    if (!p) abort();
    return p;
}

WRAPPER_ATTR static double *alloc_array(size_t n) {
#ifdef TWO_LEVEL
    return xmalloc(n * sizeof(double));
#else
    void *p = NULL;
    if (posix_memalign(&p, 64, n * sizeof(double)) != 0) abort();
    return p;
#endif
}

__attribute__((noinline)) void sweep(double *x, size_t n) {
    for (size_t i = 0; i < n; i++) x[i] = x[i] + 1.0;
}

int main(void) {
    double *a = alloc_array(N);
    double *b = alloc_array(N);
    double *c = alloc_array(N);
    for (size_t i = 0; i < N; i++) a[i] = b[i] = c[i] = 0.0;
    sweep(a, N);
    sweep(b, N);
    sweep(c, N);
    printf("%.1f\n", a[0] + b[1] + c[2] + (double)(size_t)xmalloc(0) * 0.0);
    return 0;
}
