/* A program that ends by _exit (or, with the argument E, by _Exit), which run no exit
 * handlers, after a child made by fork and one made by vfork each left by _exit: the parent's
 * report is written all the same, by the parent only, with its two sweeps. Hand counts are in
 * runtime_fork.rs. */
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#define N 4096

double A[N];

__attribute__((noinline)) void sweep(void) {
  for (int i = 0; i < N; i++) A[i] += 1.0;
}

int main(int argc, char **argv) {
  int status = 0;
  sweep();
  /* As after a failed exec: the child sweeps too, then leaves by _exit. */
  pid_t child = fork();
  if (child == 0) {
    sweep();
    _exit(3);
  }
  if (child < 0 || waitpid(child, &status, 0) != child || WEXITSTATUS(status) != 3) return 4;
  /* A vfork child shares the parent's memory and runs no fork handlers. */
  pid_t borrowed = vfork();
  if (borrowed == 0) _exit(5);
  if (borrowed < 0 || waitpid(borrowed, &status, 0) != borrowed || WEXITSTATUS(status) != 5)
    return 6;
  sweep();
  if (argc > 1 && argv[1][0] == 'E') _Exit(7);
  _exit(7);
}
