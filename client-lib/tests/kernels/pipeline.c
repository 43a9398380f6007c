/* Enough line visits that the standalone report's simulation is handed to the simulation
 * thread (thousands of batched line visits), with what must come out the same either way: a
 * heap array freed right after its last sweep (its last visits still batched when `free`
 * comes; allocated once, so no later block of its site takes them over), regions entered
 * between hand-offs, and, with an argument, a child forked while visits are with the worker.
 * Hand counts are in capture_pipeline.rs. */
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#define N 512
#define ROUNDS 3

double A[N][N], B[N][N];

/* Column walk of B: a new line, and an L1 miss, for every read of B. */
__attribute__((noinline)) void transpose_add(void) {
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++) A[i][j] += B[j][i];
}

__attribute__((noinline)) double heap_round(void) {
  double *h = malloc(sizeof(double) * N * N);
  if (!h) exit(3);
  for (long k = 0; k < (long)N * N; k++) h[k] = A[k / N][k % N];
  double s = 0.0;
  for (long k = 0; k < (long)N * N; k++) s += h[k];
  free(h);
  return s;
}

int main(int argc, char **argv) {
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++) B[i][j] = (double)(i ^ j);
  double s = 0.0;
  for (int round = 0; round < ROUNDS; round++) {
    transpose_add();
    if (argc > 1 && round == 0) {
      pid_t child = fork();
      if (child == 0) {
        transpose_add();
        _exit(0);
      }
      int status = 0;
      if (waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
        return 4;
    }
  }
  s += heap_round();
  return s > 0.0 ? 0 : 5;
}
