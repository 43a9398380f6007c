/* A sparse gather in a function of its own, for partial traces: `idx` and `y` are regular, the
 * reads of `x` at pseudo-random indices are not. */
#include <stdio.h>
#define N 40000
#define X (1 << 16)
double x[X], y[N];
int idx[N];

__attribute__((noinline)) void gather(void) {
  for (int i = 0; i < N; i++) y[i] = 2.0 * x[idx[i]];
}

int main(void) {
  unsigned state = 12345;
  for (int i = 0; i < X; i++) x[i] = i;
  for (int i = 0; i < N; i++) {
    state = state * 1103515245u + 12345u;
    idx[i] = (state >> 8) % X;
  }
  gather();
  double sum = 0.0;
  for (int i = 0; i < N; i += 97) sum += y[i];
  printf("%.1f\n", sum);
  return 0;
}
