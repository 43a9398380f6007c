/* Allocates two blocks at one site (an out parameter is not seen through), sweeps and frees
 * them, ROUNDS times: more blocks than the MCC's table holds, only two live at once. */
#include <stdio.h>
#include <stdlib.h>

#define ROUNDS 5000
#define N 1024

__attribute__((noinline)) void block(double **out) {
  *out = malloc(N * sizeof(double));
}

__attribute__((noinline)) double sweep(double *p) {
  double s = 0.0;
  for (int i = 0; i < N; i++) p[i] = i;
  for (int i = 0; i < N; i++) s += p[i];
  return s;
}

int main(void) {
  double s = 0.0;
  for (int r = 0; r < ROUNDS; r++) {
    double *p; block(&p);
    double *q; block(&q);
    s += sweep(p) + sweep(q);
    free(q);
    free(p);
  }
  printf("%.0f\n", s);
  return 0;
}
