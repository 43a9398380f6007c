/* Erlebacher ADI integration, METRIC's second kernel (section 7.2), N = 800, in C.
 *
 * Three versions of the same computation, each loop nest a function of its own:
 *   adi_original     k outer, i inner: the inner loops walk columns of row-major arrays;
 *   adi_interchanged i outer, k inner: rows, contiguous;
 *   adi_fused        interchanged, with the two inner loops fused so a[i][k] and b[i-1][k] are
 *                    reused at once.
 * METRIC (32 KB, 2-way, 32 B lines) measured miss ratios of 0.50, 0.125 and 0.10.
 *
 * The kernels are as the paper prints them. Its interchange is not quite legal: the original reads
 * b[i-1][k] in the first inner loop before the second one updates it, the interchanged version
 * after. So main runs each version from the same initial arrays, checks that interchanged and
 * fused compute the same result bit for bit (fusion keeps every element's own operations) and
 * that the original's result is finite.
 * Data structures: the globals x, a and b (5 MB each). */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "markers.h"

#define N 800

double x[N][N], a[N][N], b[N][N];

/* Values that stay well away from zero and overflow through the recurrences. */
KERNEL void init(void)
{
    for (int i = 0; i < N; i++)
        for (int k = 0; k < N; k++) {
            x[i][k] = 1.0 + (double)((i * 7 + k * 3) % 11) / 11.0;
            a[i][k] = 0.01 * (double)(1 + (i + k) % 5);
            b[i][k] = 2.0 + (double)((i * 5 + k) % 13) / 13.0;
        }
}

KERNEL void adi_original(void)
{
    for (int k = 1; k < N; k++) {
        for (int i = 2; i < N; i++)
            x[i][k] = x[i][k] - x[i - 1][k] * a[i][k] / b[i - 1][k];
        for (int i = 2; i < N; i++)
            b[i][k] = b[i][k] - a[i][k] * a[i][k] / b[i - 1][k];
    }
}

KERNEL void adi_interchanged(void)
{
    for (int i = 2; i < N; i++) {
        for (int k = 1; k < N; k++)
            x[i][k] = x[i][k] - x[i - 1][k] * a[i][k] / b[i - 1][k];
        for (int k = 1; k < N; k++)
            b[i][k] = b[i][k] - a[i][k] * a[i][k] / b[i - 1][k];
    }
}

KERNEL void adi_fused(void)
{
    for (int i = 2; i < N; i++)
        for (int k = 1; k < N; k++) {
            x[i][k] = x[i][k] - x[i - 1][k] * a[i][k] / b[i - 1][k];
            b[i][k] = b[i][k] - a[i][k] * a[i][k] / b[i - 1][k];
        }
}

/* The last rows of x and b: through the recurrences in i, every element of the result feeds
 * them, so a difference anywhere shows here (and the check reads 1,600 elements, not 1.28 million). */
KERNEL double checksum(void)
{
    double s = 0.0;
    for (int k = 0; k < N; k++)
        s = s * 0.999 + x[N - 1][k] + 0.5 * b[N - 1][k];
    return s;
}

int main(void)
{
    double sums[3];
    init();
    adi_original();
    sums[0] = checksum();
    init();
    adi_interchanged();
    sums[1] = checksum();
    init();
    adi_fused();
    sums[2] = checksum();
    printf("adi %d: checksums %.17g %.17g %.17g\n", N, sums[0], sums[1], sums[2]);
    return isfinite(sums[0]) && memcmp(&sums[1], &sums[2], sizeof(double)) == 0 ? 0 : 1;
}
