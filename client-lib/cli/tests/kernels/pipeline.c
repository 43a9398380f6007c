/* Enough line visits that the standalone report's simulation is handed to the simulation
 * thread (thousands of batched line visits), with what must come out the same either way: a
 * heap array freed right after its last sweep (its last visits still batched when `free`
 * comes; allocated once, so no later block of its site takes them over), regions entered
 * between hand-offs, and, with an argument, a child forked in the middle of a sweep.
 * Hand counts are in capture_pipeline.rs. */
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#define N 512
#define ROUNDS 3

double A[N][N], B[N][N];

/* A child forked mid-sweep, while visits are with the simulation thread: it sweeps too and
 * ends through exit (its handlers and thread-local destructors run), and must neither hang
 * nor touch the parent's report. */
static void fork_child(void) {
  pid_t child = fork();
  if (child == 0) {
    for (int i = 0; i < N; i++)
      for (int j = 0; j < N; j++) A[i][j] += B[i][j];
    exit(0);
  }
  int status = 0;
  if (child < 0 || waitpid(child, &status, 0) != child || !WIFEXITED(status) ||
      WEXITSTATUS(status) != 0)
    exit(4);
}

/* Column walk of B: a new line, and an L1 miss, for every read of B. */
__attribute__((noinline)) void transpose_add(int fork_at_row) {
  for (int i = 0; i < N; i++) {
    if (i == fork_at_row) fork_child();
    for (int j = 0; j < N; j++) A[i][j] += B[j][i];
  }
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
  for (int round = 0; round < ROUNDS; round++) transpose_add(argc > 1 && round == 1 ? N / 2 : -1);
  s += heap_round();
  return s > 0.0 ? 0 : 5;
}
