/* Blocked and naive transpose of a square matrix: strided writes that stress set conflicts. */
#include <stdio.h>

#define N 160
static double a[N][N], b[N][N];

int main(void) {
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++)
            a[i][j] = i * N + j;
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++)
            b[j][i] = a[i][j];
    for (int ii = 0; ii < N; ii += 16)
        for (int jj = 0; jj < N; jj += 16)
            for (int i = ii; i < ii + 16; i++)
                for (int j = jj; j < jj + 16; j++)
                    a[j][i] = b[i][j] * 0.5;
    double sum = 0;
    for (int i = 0; i < N; i++)
        sum += a[i][(i * 7) % N];
    printf("%f\n", sum);
    return 0;
}
