/* Sweeps an array, then changes its working directory to the one its argument names and
 * exits: the report must still go where EPCACHE_REPORT said, relative to the start. */
#include <stdio.h>
#include <unistd.h>

double a[4096];

void sweep(void) {
  for (int i = 0; i < 4096; i++) a[i] += 1.0;
}

int main(int argc, char **argv) {
  sweep();
  if (argc > 1 && chdir(argv[1]) != 0) return 2;
  return 0;
}
