/* Shared by the suite's C kernels: the repetition count from argv[1] (the bench scales it). */
#include <stdio.h>
#include <stdlib.h>

static int reps_of(int argc, char **argv) {
  int reps = argc > 1 ? atoi(argv[1]) : 1;
  return reps > 0 ? reps : 1;
}
