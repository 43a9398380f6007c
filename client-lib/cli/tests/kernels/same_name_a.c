/* Two static functions named `init`, one in each of two files (with same_name_b.c): this one
   runs once over x, the other twice over y. */
#include <stdio.h>

double x[4096], y[4096];
void run_b(void);

static __attribute__((noinline)) void init(void) {
  for (int i = 0; i < 4096; i++) x[i] = i;
}

int main(void) {
  init();
  run_b();
  printf("%g\n", x[5] + y[5]);
  return 0;
}
