/* Gauss elimination without pivoting, the EP-Cache paper's example (section 5), in C.
 *
 * A is 100x100 REAL as in the paper's Fortran 90 program, stored column-major as Fortran stores
 * it: A[j][i] holds A(i,j). The original loop order walks rows of A in its inner loop (a stride of
 * 400 bytes), the optimised one columns (contiguous), so read misses of A fall sharply.
 *
 * Regions: the functions elim_original and elim_optimised (automatic), inside the markers
 * gauss_original and gauss_optimised. Data structures: the globals A, b and x. */
#include <math.h>
#include <stdio.h>

#include "markers.h"

#define N 100

float A[N][N]; /* A[j][i] is A(i,j) */
float b[N];
float x[N];

/* Diagonally dominant, so elimination without pivoting is stable; b = A * ones, so x = ones. */
KERNEL void init(void)
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
KERNEL void elim_original(void)
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
KERNEL void elim_optimised(void)
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
KERNEL float back_substitute(void)
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
    init();
    EPCACHE_REGION_BEGIN("gauss_original");
    elim_original();
    EPCACHE_REGION_END();
    float err_original = back_substitute();

    init();
    EPCACHE_REGION_BEGIN("gauss_optimised");
    elim_optimised();
    EPCACHE_REGION_END();
    float err_optimised = back_substitute();

    printf("gauss %d: max error original %.1e optimised %.1e\n", N, err_original, err_optimised);
    return err_original < 1e-3f && err_optimised < 1e-3f ? 0 : 1;
}
