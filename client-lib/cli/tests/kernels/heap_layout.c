/* Prints where the heap places a program's blocks relative to the first: small and large
   mallocs, calloc, realloc, blocks freed and allocated again; not the one the
   C library maps on its own (300,000 bytes), whose page the kernel picks. A monitored run must
   print what the plain build prints (heap_layout.rs). */
#include <stdio.h>
#include <stdlib.h>

static double sum(const double *x, long n)
{
    double s = 0;
    for (long i = 0; i < n; i++)
        s += x[i];
    return s;
}

int main(void)
{
    const long sizes[] = {100, 5000, 40000, 40000, 40000, 300000, 8192, 24};
    char *blocks[16];
    int n = 0;
    for (unsigned i = 0; i < sizeof sizes / sizeof sizes[0]; i++) {
        blocks[n] = malloc(sizes[i]);
        for (long j = 0; j < sizes[i]; j++)
            blocks[n][j] = (char)j;
        n++;
    }
    blocks[n++] = calloc(1000, 48);
    free(blocks[2]);
    blocks[n++] = malloc(20000);
    blocks[1] = realloc(blocks[1], 12000);
    void *aligned = NULL;
    if (posix_memalign(&aligned, 4096, 65536) != 0)
        return 1;
    blocks[n++] = aligned;
    double s = sum((const double *)blocks[3], 5000) + sum((const double *)aligned, 8192);
    /* Where an aligned block falls depends on where the heap starts, which the C library's
       own bookkeeping for the runtime's thread moves by a few dozen bytes: only its alignment. */
    for (int i = 1; i < n - 1; i++)
        if (i != 5)
            printf("%d %ld\n", i, (long)(blocks[i] - blocks[0]));
    printf("aligned %ld\n", (long)aligned % 4096);
    fprintf(stderr, "%g\n", s);
    return 0;
}
