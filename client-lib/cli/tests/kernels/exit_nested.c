/* Ends the program with exit() from inside a function: `work` and `main` are still open when
 * the C library runs its exit handlers (the thread-local destructors first, then the report's
 * handler). */
#include <stdlib.h>

double v[4096];

void work(void) {
  for (int i = 0; i < 4096; i++) v[i] += 1.0;
  exit(3);
}

int main(void) {
  work();
  return 0;
}
