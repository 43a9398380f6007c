/* Hand-countable kernel for `epcache cc`: N stores, then N loads, over a global int array. */
#include <stdio.h>
#define N 4096
int a[N] __attribute__((aligned(64)));

__attribute__((noinline)) void fill(void) {
  for (int i = 0; i < N; i++) a[i] = i;
}

__attribute__((noinline)) long total(void) {
  long s = 0;
  for (int i = 0; i < N; i++) s += a[i];
  return s;
}

int main(void) {
  fill();
  printf("%ld\n", total());
  return 0;
}
