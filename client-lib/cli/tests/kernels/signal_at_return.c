/* A program that sends itself SIGTERM as the last thing a nested function does, so the held
 * signal's safe point is that function's return: the report must still close every region
 * with its own counts (runtime_signals.rs). Each sweep reads and writes A's 4096 elements. */
#include <signal.h>

#define N 4096

double A[N];

__attribute__((noinline)) void sweep(void) {
  for (int i = 0; i < N; i++) A[i] += 1.0;
}

/* No captured access after the raise: the next safe point is this function's exit. */
__attribute__((noinline)) void sweep_then_stop(void) {
  sweep();
  raise(SIGTERM);
}

int main(void) {
  sweep();
  sweep_then_stop();
  /* Never reached: the program dies of its signal at the return above. */
  sweep();
  return 0;
}
