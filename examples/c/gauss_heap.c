/* gauss.c with its arrays on the heap: the EP-Cache paper's Gauss elimination as most real
 * programs would write it, for the tool programs to find A by its allocation line.
 *
 * The kernels are gauss.c's, line for line; they take the arrays as `restrict` parameters, which
 * tells gcc what distinct globals told it (A, b and x never overlap), so it emits the same loads
 * and stores. A is one heap block of 40,000 bytes, named by epcache after the line that allocates
 * it, line-aligned as the global A is (gcc aligns a global array of this size to 32 bytes); b and
 * x are malloc'd, 400 bytes each, below the 4096 bytes from which epcache names a heap block, so
 * their accesses count in the regions but in no data structure.
 *
 * Regions: the functions elim_original and elim_optimised (automatic), inside the markers
 * gauss_original and gauss_optimised. Data structure: A's block (`gauss_heap.c:LINE`). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "markers.h"

#define N 100

/* Diagonally dominant, so elimination without pivoting is stable; b = A * ones, so x = ones. */
KERNEL void init(float (*restrict A)[N], float *restrict b)
{
    for (int j = 0; j < N; j++)
        for (int i = 0; i < N; i++)
            A[j][i] = i == j ? (float)N : 1.0f / (float)(1 + i + j);
    for (int i = 0; i < N; i++) {
        float s = 0.0f;
        for (int j = 0; j < N; j++)
            s += A[j][i];
        b[i] = s;
    }
}

/* Row-oriented update: the inner loop runs along row i of A. */
KERNEL void elim_original(float (*restrict A)[N], float *restrict b)
{
    for (int k = 0; k < N - 1; k++)
        for (int i = k + 1; i < N; i++) {
            float l = A[k][i] / A[k][k];
            for (int j = k + 1; j < N; j++)
                A[j][i] = A[j][i] - l * A[j][k];
            b[i] = b[i] - l * b[k];
        }
}

/* Multipliers stored in place, then column-oriented updates: the inner loop runs down a column. */
KERNEL void elim_optimised(float (*restrict A)[N], float *restrict b)
{
    for (int k = 0; k < N - 1; k++) {
        for (int i = k + 1; i < N; i++) {
            float l = A[k][i] / A[k][k];
            A[k][i] = l;
            b[i] = b[i] - l * b[k];
        }
        for (int j = k + 1; j < N; j++)
            for (int i = k + 1; i < N; i++)
                A[j][i] = A[j][i] - A[k][i] * A[j][k];
    }
}

/* Solves the upper triangle; returns the largest error against the known solution (all ones). */
KERNEL float back_substitute(float (*restrict A)[N], const float *restrict b, float *restrict x)
{
    float err = 0.0f;
    for (int i = N - 1; i >= 0; i--) {
        float s = b[i];
        for (int j = i + 1; j < N; j++)
            s -= A[j][i] * x[j];
        x[i] = s / A[i][i];
        err = fmaxf(err, fabsf(x[i] - 1.0f));
    }
    return err;
}

int main(void)
{
    float(*A)[N] = NULL; /* A[j][i] is A(i,j) */
    if (posix_memalign((void **)&A, 64, sizeof(float[N][N])) != 0)
        return 2;
    float *b = malloc(N * sizeof(float));
    float *x = malloc(N * sizeof(float));
    if (!b || !x)
        return 2;

    init(A, b);
    EPCACHE_REGION_BEGIN("gauss_original");
    elim_original(A, b);
    EPCACHE_REGION_END();
    float err_original = back_substitute(A, b, x);

    init(A, b);
    EPCACHE_REGION_BEGIN("gauss_optimised");
    elim_optimised(A, b);
    EPCACHE_REGION_END();
    float err_optimised = back_substitute(A, b, x);

    printf("gauss %d: max error original %.1e optimised %.1e\n", N, err_original, err_optimised);
    free(x);
    free(b);
    free(A);
    return err_original < 1e-3f && err_optimised < 1e-3f ? 0 : 1;
}
