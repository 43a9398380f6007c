/* Non-local exits through instrumented code: each round, `inner` longjmps out of itself, of
   `middle` and of the marker region `guarded` that `middle` opened, back to `attempt`'s setjmp.
   `sweep` then runs outside all of them. Usage: longjmp_loop [rounds] (default 100000). */
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>

#include "epcache.h"

#define LEN 4096
double v[LEN];
static jmp_buf where;

__attribute__((noinline)) void inner(int i) {
  v[i % LEN] += 1.0;
  longjmp(where, 1);
}

__attribute__((noinline)) void middle(int i) {
  v[(i + 1) % LEN] += 1.0;
  EPCACHE_REGION_BEGIN("guarded");
  inner(i);
  EPCACHE_REGION_END();
}

__attribute__((noinline)) int attempt(int i) {
  if (setjmp(where) == 0) {
    middle(i);
    return 0;
  }
  return 1;
}

__attribute__((noinline)) void sweep(void) {
  for (int i = 0; i < LEN; i++) v[i] *= 0.5;
}

int main(int argc, char **argv) {
  int rounds = argc > 1 ? atoi(argv[1]) : 100000;
  int jumped = 0;
  for (int i = 0; i < rounds; i++) jumped += attempt(i);
  sweep();
  printf("%d\n", jumped);
  return 0;
}
