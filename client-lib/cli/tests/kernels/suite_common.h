/* Shared by the suite's C kernels: the repetition count from argv[1] (the bench scales it), and
 * the alignment of their arrays: at 2 MiB, every array starts in set 0 of every cache the bench
 * simulates whatever the size of the runtime linked in before them, so a build with another
 * runtime counts exactly the same (the bench compares counts with a stored reference). */
#include <stdio.h>
#include <stdlib.h>

static int reps_of(int argc, char **argv) {
  int reps = argc > 1 ? atoi(argv[1]) : 1;
  return reps > 0 ? reps : 1;
}

#define SUITE_ALIGNED __attribute__((aligned(2 * 1024 * 1024)))
