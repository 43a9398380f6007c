/* Row-wise then column-wise sum over a 2-D int array (the cache-reuse paper's example, smaller). */
#include <stdio.h>

#define N 300
static int m[N][N];

int main(void) {
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++)
            m[i][j] = i ^ j;
    long rows = 0, cols = 0;
    for (int i = 0; i < N; i++)
        for (int j = 0; j < N; j++)
            rows += m[i][j];
    for (int j = 0; j < N; j++)
        for (int i = 0; i < N; i++)
            cols += m[i][j];
    printf("%ld %ld\n", rows, cols);
    return 0;
}
