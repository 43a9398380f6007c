/* Each thread of a parallel region allocates its own array at one line (PRIVATE_LINE), writes
 * and reads it NREP times, and frees it: a request on that line counts every thread's block. */
#include <stdio.h>
#include <stdlib.h>

#define N 2048
#define NREP 2

__attribute__((noinline)) double chunks(void)
{
    double total = 0;
#pragma omp parallel reduction(+ : total)
    {
        double *w = malloc(N * sizeof(double));
        for (int r = 0; r < NREP; r++) {
            for (int i = 0; i < N; i++)
                w[i] = i + r;
            for (int i = 0; i < N; i++)
                total += w[i];
        }
        free(w);
    }
    return total;
}

int main(void)
{
    printf("%.1f\n", chunks());
    return 0;
}
