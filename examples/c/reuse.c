/* Row-wise and column-wise sums over int m[1000][1000], the example of "Collecting and Exploiting
 * Cache-Reuse Metrics" (Weidendorfer and Trinitis, Table 1), in C.
 *
 * With a 32 KB, 8-way, 64 B-line L1 (their Pentium M), sum_rows loads each line once and uses all
 * 16 ints of it (62,500 L1 loads, spatial use 100%, temporal reuse 16); sum_cols loads a line for
 * nearly every element and uses 4 of its 64 bytes (999,992 loads, 6%, 1).
 *
 * Regions: the functions init_matrix, sum_rows and sum_cols. Data structure: the global m. */
#include <stdio.h>

#include "markers.h"

#define DIM 1000

int m[DIM][DIM];

/* Also what makes the paper's loop counters invisible: the matrix is in use before the sums. */
KERNEL void init_matrix(void)
{
    for (int i = 0; i < DIM; i++)
        for (int j = 0; j < DIM; j++)
            m[i][j] = (i * 31 + j * 17) % 101;
}

KERNEL long sum_rows(void)
{
    long sum = 0;
    for (int i = 0; i < DIM; i++)
        for (int j = 0; j < DIM; j++)
            sum += m[i][j];
    return sum;
}

KERNEL long sum_cols(void)
{
    long sum = 0;
    for (int i = 0; i < DIM; i++)
        for (int j = 0; j < DIM; j++)
            sum += m[j][i];
    return sum;
}

int main(void)
{
    init_matrix();
    long rows = sum_rows();
    long cols = sum_cols();
    printf("reuse %d: row-wise sum %ld, column-wise sum %ld\n", DIM, rows, cols);
    return rows == cols ? 0 : 1;
}
