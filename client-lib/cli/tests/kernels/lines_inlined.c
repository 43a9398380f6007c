/* Kernels gcc inlines into main at -O2: a matrix product (dot inlined into product), a
 * transposition and a strided sum. Per-line misses are compared with cg_annotate's
 * (tests/it/line_attribution.rs). */
#include <stdio.h>

#define N 160
static double a[N][N], b[N][N], c[N][N], t[N][N];

static inline double dot(int i, int j) {
    double s = 0;
    for (int k = 0; k < N; k++)
        s += a[i][k] * b[k][j];
    return s;
}

static inline void product(void) {
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++)
            c[i][j] = dot(i, j);
}

static inline void transpose(void) {
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++)
            t[j][i] = c[i][j];
}

static inline double column_sums(void) {
    double s = 0;
    for (int j = 0; j < N; j++)
        for (int i = 0; i < N; i++)
            s += t[i][j];
    return s;
}

int main(void) {
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++) {
            a[i][j] = i + j;
            b[i][j] = i - j;
        }
    product();
    transpose();
    printf("%f %f\n", c[N / 2][N / 3], column_sums());
    return 0;
}
