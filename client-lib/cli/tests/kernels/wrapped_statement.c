/* Two arrays allocated in one statement through a wrapper of a wrapper, which the compiler
 * inlines into the statement (vec_new around xmalloc): each is named by its own variable.
 * `touch` reads each array's first N - 1000 * k elements, k its place in `all`. */
#include <stdio.h>
#include <stdlib.h>

#define N 10000

static void *xmalloc(size_t bytes) {
    void *p = malloc(bytes);
    if (!p) abort();
    return p;
}

static double *vec_new(int n) { return xmalloc(n * sizeof(double)); }

__attribute__((noinline)) double touch(const double *v, int n) {
    double s = 0;
    for (int i = 0; i < n; i++) s += v[i];
    return s;
}

int main(void) {
    double *a = vec_new(N), *b = vec_new(N);
    double *all[] = {a, b};
    double s = 0;
    for (int k = 0; k < 2; k++) {
        for (int i = 0; i < N; i++) all[k][i] = 1.0;
        s += touch(all[k], N - 1000 * k);
    }
    printf("%.1f\n", s);
    return 0;
}
