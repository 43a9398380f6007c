/* A program that ends by quick_exit, which runs no exit handlers, only those registered with
 * at_quick_exit: the report is written all the same, after the program's own handler (which
 * sweeps once more), so it has three sweeps. Hand counts are in runtime_fork.rs. */
#include <stdlib.h>

#define N 4096

double A[N];

__attribute__((noinline)) void sweep(void) {
  for (int i = 0; i < N; i++) A[i] += 1.0;
}

static void on_quick_exit(void) { sweep(); }

int main(void) {
  sweep();
  at_quick_exit(on_quick_exit);
  sweep();
  quick_exit(6);
}
