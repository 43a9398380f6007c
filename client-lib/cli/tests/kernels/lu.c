/* In-place LU decomposition of a global matrix, as in PolyBench lu (size from LU_N, default 60). */
#include <stdio.h>

#ifndef LU_N
#define LU_N 60
#endif
static double A[LU_N][LU_N];

int main(void) {
    int n = LU_N;
    for (int i = 0; i < n; i++)
        for (int j = 0; j < n; j++)
            A[i][j] = (i == j) ? n + 1.0 : (double)((i * j) % n) / n;
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < i; j++) {
            for (int k = 0; k < j; k++)
                A[i][j] -= A[i][k] * A[k][j];
            A[i][j] /= A[j][j];
        }
        for (int j = i; j < n; j++)
            for (int k = 0; k < i; k++)
                A[i][j] -= A[i][k] * A[k][j];
    }
    printf("%f\n", A[n - 1][n - 1]);
    return 0;
}
