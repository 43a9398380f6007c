/* A fill and a copy of 1 MiB each, then a read of the copy's first byte per line: their misses
   belong to lines 10, 11 and 13. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#define N (1 << 20)
int main(void) {
    char *a = malloc(N);
    char *b = malloc(N);
    memset(a, 1, N);
    memcpy(b, a, N);
    long s = 0;
    for (int i = 0; i < N; i += 64) s += b[i];
    printf("%ld\n", s);
    free(a);
    free(b);
    return 0;
}
