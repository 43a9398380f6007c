/* Sweeps X, then crashes the way its argument says: "segv" writes through a null pointer,
 * "assert" fails an assertion (SIGABRT), "double_free" frees a block twice (glibc aborts from
 * inside the allocator). */
#include <assert.h>
#include <stdlib.h>
#include <string.h>

double X[4096];
int *volatile nowhere;

void sweep(void) {
  for (int i = 0; i < 4096; i++) X[i] += 1.0;
}

void crash(const char *how) {
  if (!strcmp(how, "segv")) *nowhere = 1;
  if (!strcmp(how, "assert")) assert(X[0] < 0.0);
  if (!strcmp(how, "double_free")) {
    char *volatile block = malloc(64);
    free(block);
    free(block);
  }
}

int main(int argc, char **argv) {
  sweep();
  if (argc > 1) crash(argv[1]);
  return 0;
}
