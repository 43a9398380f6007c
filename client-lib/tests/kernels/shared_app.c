/* Calls the shared library's kernel (`shared_lib.c`) twice. */
#include <stdio.h>

void lib_sweep(void);

double A[4096];

int main(void) {
  for (int i = 0; i < 4096; i++) A[i] = i;
  lib_sweep();
  lib_sweep();
  printf("ok\n");
  return 0;
}
