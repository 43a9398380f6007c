/* Matrix multiply, METRIC's first kernel (section 7.1), MAT_DIM = 800, doubles, in C.
 *
 *   mm_naive  i, j, k: the inner loop walks a column of xz (a stride of 6400 bytes);
 *   mm_tiled  jj, kk, i, k, j with tile size 16: xz's 16x16 tile stays in the cache while i runs.
 * METRIC (32 KB, 2-way, 32 B lines) measured miss ratios of 0.26 and 0.018 on the first 10^6
 * accesses of each, and spatial use rising from 0.17 to 0.70.
 *
 * The kernels take the arrays as parameters that may alias, so gcc reads and writes xx[i][j] in
 * every iteration instead of keeping it in a register: four accesses per iteration (xy, xz, xx
 * read, xx write), as in METRIC's measurement ("compiling without allocating xx[i][j] to a
 * register in the inner loop").
 *
 * A whole product is 512 million iterations, too many for a test, so, like
 * METRIC's partial traces, the program can compute part of it: `mm ROWS COLS` has both kernels
 * compute the top-left ROWS x COLS block of the product (COLS a multiple of 16); with no arguments
 * all of it. main checks that both agree there. Data structures: the globals xx, xy, xz (5 MB
 * each) and xt, the tiled kernel's result. */
#include <stdio.h>
#include <stdlib.h>

#include "markers.h"

#define MAT_DIM 800
#define TILE 16

double xx[MAT_DIM][MAT_DIM], xy[MAT_DIM][MAT_DIM], xz[MAT_DIM][MAT_DIM];
double xt[MAT_DIM][MAT_DIM];

/* The results xx and xt start at zero, as globals do. */
KERNEL void init(void)
{
    for (int i = 0; i < MAT_DIM; i++)
        for (int j = 0; j < MAT_DIM; j++) {
            xy[i][j] = (double)((i + 2 * j) % 17) / 16.0;
            xz[i][j] = (double)((3 * i + j) % 13) / 12.0;
        }
}

/* xx += xy * xz over rows [0, rows) and columns [0, cols). */
KERNEL void mm_naive(double (*xx)[MAT_DIM], double (*xy)[MAT_DIM], double (*xz)[MAT_DIM], int rows,
                     int cols)
{
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < cols; j++)
            for (int k = 0; k < MAT_DIM; k++)
                xx[i][j] = xy[i][k] * xz[k][j] + xx[i][j];
}

/* The same, tiled for the cache (cols a multiple of the tile size). */
KERNEL void mm_tiled(double (*xx)[MAT_DIM], double (*xy)[MAT_DIM], double (*xz)[MAT_DIM], int rows,
                     int cols)
{
    int ts = TILE;
    for (int jj = 0; jj < cols; jj += ts)
        for (int kk = 0; kk < MAT_DIM; kk += ts)
            for (int i = 0; i < rows; i++)
                for (int k = kk; k < (kk + ts < MAT_DIM ? kk + ts : MAT_DIM); k++)
                    for (int j = jj; j < (jj + ts < MAT_DIM ? jj + ts : MAT_DIM); j++)
                        xx[i][j] = xy[i][k] * xz[k][j] + xx[i][j];
}

int main(int argc, char **argv)
{
    int rows = argc > 1 ? atoi(argv[1]) : MAT_DIM;
    int cols = argc > 2 ? atoi(argv[2]) : MAT_DIM;
    if (rows < 0 || rows > MAT_DIM || cols < 0 || cols > MAT_DIM || cols % TILE != 0) {
        fprintf(stderr, "usage: mm [ROWS (0..%d) [COLS (0..%d, a multiple of %d)]]\n", MAT_DIM,
                MAT_DIM, TILE);
        return 2;
    }
    init();
    mm_naive(xx, xy, xz, rows, cols);
    mm_tiled(xt, xy, xz, rows, cols);
    /* Both add the same products in the same k order, so they agree exactly. */
    long differ = 0;
    for (int i = 0; i < rows; i++)
        for (int j = 0; j < cols; j++)
            differ += xx[i][j] != xt[i][j];
    printf("mm %d: %d x %d block, naive and tiled differ in %ld elements\n", MAT_DIM, rows, cols,
           differ);
    return differ == 0 ? 0 : 1;
}
