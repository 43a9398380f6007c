/* adi.c with its arrays on the heap: METRIC's Erlebacher ADI integration (N = 800) as most real
 * programs would write it, for the tool programs to find x, a and b by their allocation lines.
 *
 * The kernels are adi.c's, line for line; they take the arrays as `restrict` parameters, which
 * tells gcc what distinct globals told it (x, a and b never overlap), so it emits the same loads
 * and stores. Each array is one 5 MB block, line-aligned as the globals are, named by epcache
 * after the line that allocates it.
 *
 * Regions: the functions init, adi_original, adi_interchanged, adi_fused and checksum. Data
 * structures: the three blocks (`adi_heap.c:LINE`). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "markers.h"

#define N 800

/* Values that stay well away from zero and overflow through the recurrences. */
KERNEL void init(double (*restrict x)[N], double (*restrict a)[N],
                 double (*restrict b)[N])
{
    for (int i = 0; i < N; i++)
        for (int k = 0; k < N; k++) {
            x[i][k] = 1.0 + (double)((i * 7 + k * 3) % 11) / 11.0;
            a[i][k] = 0.01 * (double)(1 + (i + k) % 5);
            b[i][k] = 2.0 + (double)((i * 5 + k) % 13) / 13.0;
        }
}

KERNEL void adi_original(double (*restrict x)[N], double (*restrict a)[N],
                         double (*restrict b)[N])
{
    for (int k = 1; k < N; k++) {
        for (int i = 2; i < N; i++)
            x[i][k] = x[i][k] - x[i - 1][k] * a[i][k] / b[i - 1][k];
        for (int i = 2; i < N; i++)
            b[i][k] = b[i][k] - a[i][k] * a[i][k] / b[i - 1][k];
    }
}

KERNEL void adi_interchanged(double (*restrict x)[N], double (*restrict a)[N],
                             double (*restrict b)[N])
{
    for (int i = 2; i < N; i++) {
        for (int k = 1; k < N; k++)
            x[i][k] = x[i][k] - x[i - 1][k] * a[i][k] / b[i - 1][k];
        for (int k = 1; k < N; k++)
            b[i][k] = b[i][k] - a[i][k] * a[i][k] / b[i - 1][k];
    }
}

KERNEL void adi_fused(double (*restrict x)[N], double (*restrict a)[N],
                      double (*restrict b)[N])
{
    for (int i = 2; i < N; i++)
        for (int k = 1; k < N; k++) {
            x[i][k] = x[i][k] - x[i - 1][k] * a[i][k] / b[i - 1][k];
            b[i][k] = b[i][k] - a[i][k] * a[i][k] / b[i - 1][k];
        }
}

/* The last rows of x and b: through the recurrences in i, every element of the result feeds
 * them, so a difference anywhere shows here (and the check reads 1,600 elements, not 1.28 million). */
KERNEL double checksum(const double (*restrict x)[N], const double (*restrict b)[N])
{
    double s = 0.0;
    for (int k = 0; k < N; k++)
        s = s * 0.999 + x[N - 1][k] + 0.5 * b[N - 1][k];
    return s;
}

int main(void)
{
    double(*x)[N] = NULL, (*a)[N] = NULL, (*b)[N] = NULL;
    /* Line-aligned, as the global arrays are (a bare malloc of 5 MB is mmap'd 16 bytes into a
     * page, half way through a 32-byte line). */
    if (posix_memalign((void **)&x, 64, sizeof(double[N][N])) != 0 ||
        posix_memalign((void **)&a, 64, sizeof(double[N][N])) != 0 ||
        posix_memalign((void **)&b, 64, sizeof(double[N][N])) != 0)
        return 2;
    double sums[3];
    init(x, a, b);
    adi_original(x, a, b);
    sums[0] = checksum(x, b);
    init(x, a, b);
    adi_interchanged(x, a, b);
    sums[1] = checksum(x, b);
    init(x, a, b);
    adi_fused(x, a, b);
    sums[2] = checksum(x, b);
    printf("adi %d: checksums %.17g %.17g %.17g\n", N, sums[0], sums[1], sums[2]);
    free(b);
    free(a);
    free(x);
    return isfinite(sums[0]) && memcmp(&sums[1], &sums[2], sizeof(double)) == 0 ? 0 : 1;
}
