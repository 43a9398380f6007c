/* A time-stepped 2-D relaxation for the incremental online-analysis tool (`examples/src/online.rs`):
 * several kernels per time step, one of which has a hot spot inside one array.
 *
 * Each of STEPS steps runs three kernels over N x N doubles (row-major, 2 KB per row):
 *   smooth  V = the 4-neighbour average of U, row by row;
 *   relax   U relaxed in place: row by row, except the band of rows [BAND_FIRST, BAND_END),
 *           which is swept column by column (as code ported from a column-major original often
 *           is). A column of the band is BAND_END - BAND_FIRST + 2 lines 2 KB apart, more than
 *           an 8-way L1 keeps in the two sets they map to, so the band misses on every point
 *           while the rest of U misses once per line;
 *   source  U = V + F * coef, row by row.
 * So relax is where U misses most per instance, and the band, an eighth of U, holds more than
 * half of those misses: what the tool should find, stepping from region to region. */
#include <stdio.h>

#include "markers.h"

#define N 256
#define STEPS 6
#define BAND_FIRST 96
#define BAND_END 128

double U[N][N], V[N][N], F[N][N];
double coef[N];

KERNEL void init(void)
{
    for (int i = 0; i < N; i++) {
        coef[i] = 1.0 / (double)(i + 1);
        for (int j = 0; j < N; j++) {
            U[i][j] = (double)((i * 7 + j * 3) % 11);
            F[i][j] = (double)((i + j) % 5) / 4.0;
        }
    }
}

KERNEL void smooth(void)
{
    for (int i = 1; i < N - 1; i++)
        for (int j = 1; j < N - 1; j++)
            V[i][j] = 0.25 * (U[i - 1][j] + U[i + 1][j] + U[i][j - 1] + U[i][j + 1]);
}

static inline void relax_point(int i, int j)
{
    U[i][j] = 0.5 * U[i][j] + 0.125 * (U[i - 1][j] + U[i + 1][j] + U[i][j - 1] + U[i][j + 1]);
}

KERNEL void relax(void)
{
    for (int i = 1; i < N - 1; i++) {
        if (i >= BAND_FIRST && i < BAND_END)
            continue;
        for (int j = 1; j < N - 1; j++)
            relax_point(i, j);
    }
    for (int j = 1; j < N - 1; j++)
        for (int i = BAND_FIRST; i < BAND_END; i++)
            relax_point(i, j);
}

KERNEL void source(void)
{
    for (int i = 1; i < N - 1; i++)
        for (int j = 1; j < N - 1; j++)
            U[i][j] = 0.5 * V[i][j] + F[i][j] * coef[i];
}

int main(void)
{
    init();
    for (int step = 0; step < STEPS; step++) {
        smooth();
        relax();
        source();
    }
    double sum = 0.0;
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++)
            sum += U[i][j];
    printf("heat %d x %d, %d steps: sum %.6f\n", N, N, STEPS, sum);
    return sum > 0.0 ? 0 : 1;
}
