/* heat.c with its grids on the heap: the time-stepped relaxation for the tool programs to find
 * U's hot band by its allocation line, as they find it for heat.c's globals.
 *
 * The kernels are heat.c's, line for line; they take the grids as `restrict` parameters, which
 * tells gcc what distinct globals told it, so it emits the same loads and stores. U, V and F are
 * malloc'd blocks of 512 KB, each named by epcache after the line that allocates it; coef is 2 KB,
 * below the 4096 bytes from which epcache names a heap block, so its accesses count in the
 * regions but in no data structure. The blocks are line-aligned (posix_memalign), as a global
 * array of this size is, so a row of U is 32 whole lines as in heat.c's hand counts.
 *
 * Each of STEPS steps runs smooth, relax (which sweeps the band of rows [BAND_FIRST, BAND_END)
 * column by column) and source; see heat.c. */
#include <stdio.h>
#include <stdlib.h>

#include "markers.h"

#define N 256
#define STEPS 6
#define BAND_FIRST 96
#define BAND_END 128

typedef double grid[N][N];

KERNEL void init(grid *restrict U, grid *restrict F, double *restrict coef)
{
    for (int i = 0; i < N; i++) {
        coef[i] = 1.0 / (double)(i + 1);
        for (int j = 0; j < N; j++) {
            (*U)[i][j] = (double)((i * 7 + j * 3) % 11);
            (*F)[i][j] = (double)((i + j) % 5) / 4.0;
        }
    }
}

KERNEL void smooth(const grid *restrict U, grid *restrict V)
{
    for (int i = 1; i < N - 1; i++)
        for (int j = 1; j < N - 1; j++)
            (*V)[i][j] = 0.25 * ((*U)[i - 1][j] + (*U)[i + 1][j] + (*U)[i][j - 1] + (*U)[i][j + 1]);
}

static inline void relax_point(grid *restrict U, int i, int j)
{
    (*U)[i][j] = 0.5 * (*U)[i][j] +
                 0.125 * ((*U)[i - 1][j] + (*U)[i + 1][j] + (*U)[i][j - 1] + (*U)[i][j + 1]);
}

KERNEL void relax(grid *restrict U)
{
    for (int i = 1; i < N - 1; i++) {
        if (i >= BAND_FIRST && i < BAND_END)
            continue;
        for (int j = 1; j < N - 1; j++)
            relax_point(U, i, j);
    }
    for (int j = 1; j < N - 1; j++)
        for (int i = BAND_FIRST; i < BAND_END; i++)
            relax_point(U, i, j);
}

KERNEL void source(grid *restrict U, const grid *restrict V, const grid *restrict F,
                   const double *restrict coef)
{
    for (int i = 1; i < N - 1; i++)
        for (int j = 1; j < N - 1; j++)
            (*U)[i][j] = 0.5 * (*V)[i][j] + (*F)[i][j] * coef[i];
}

int main(void)
{
    /* One call per grid: a block is named by the line that allocates it, so a helper that
     * allocated all three would give them one name. */
    grid *U = NULL, *V = NULL, *F = NULL;
    if (posix_memalign((void **)&U, 64, sizeof(grid)) != 0 ||
        posix_memalign((void **)&V, 64, sizeof(grid)) != 0 ||
        posix_memalign((void **)&F, 64, sizeof(grid)) != 0)
        return 2;
    double *coef = malloc(N * sizeof(double));
    if (!coef)
        return 2;
    init(U, F, coef);
    for (int step = 0; step < STEPS; step++) {
        smooth(U, V);
        relax(U);
        source(U, V, F, coef);
    }
    double sum = 0.0;
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++)
            sum += (*U)[i][j];
    printf("heat %d x %d, %d steps: sum %.6f\n", N, N, STEPS, sum);
    free(coef);
    free(F);
    free(V);
    free(U);
    return sum > 0.0 ? 0 : 1;
}
