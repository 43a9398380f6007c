/* Heap arrays a tool requests by allocation site before they exist; lines matter. `vector`'s
 * out parameter is not seen through by default: line 10 is one site of two blocks. */
#include <stdio.h>
#include <stdlib.h>

#define N 20000

static void vector(double **out, int n)
{
    *out = malloc(n * sizeof(double));
}

void scale(double *a, int n, double f)
{
    for (int i = 0; i < n; i++)
        a[i] = a[i] * f;
}

int main(int argc, char **argv)
{
    double *a = malloc(N * sizeof(double));
    double *large; vector(&large, N);
    double *small; vector(&small, N / 2);
    for (int i = 0; i < N; i++)
        a[i] = large[i] = i;
    for (int i = 0; i < N / 2; i++)
        small[i] = i;
    scale(a, N, 2.0);
    scale(large, N, 0.5);
    if (argc > 5) {
        double *never = malloc(N * sizeof(double));
        scale(never, N, 1.0);
        free(never);
    }
    printf("%g %g %g\n", a[N - 1], large[N - 1], small[N / 2 - 1]);
    free(a);
    free(large);
    free(small);
    return 0;
}

/* Never called: a request on it measures nothing because it never runs. */
void unused(double *a, int n)
{
    for (int i = 0; i < n; i++)
        a[i] = 0;
}
