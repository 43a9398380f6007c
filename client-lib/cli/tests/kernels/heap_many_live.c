/* More live tracked heap blocks than the segment's data-structure table holds (4096): each
   8 KiB block (line 10) is written 128 times and kept. */
#include <stdio.h>
#include <stdlib.h>
int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 6000;
    double s = 0;
    double **live = calloc(n, sizeof *live);
    for (long i = 0; i < n; i++) {
        double *p = malloc(8192);
        for (int j = 0; j < 1024; j += 8) p[j] = i + j;
        s += p[8];
        live[i] = p;
    }
    printf("%.0f\n", s);
    return 0;
}
