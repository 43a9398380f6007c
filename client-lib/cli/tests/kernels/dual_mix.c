/* What a dual build (plain and instrumented copy of every function, chosen at entry) must keep
 * right: file-scope and function-scope statics written by both copies, a switch table each
 * copy may keep privately, function pointers stored in data, recursion, a constructor, and a
 * marker region (whose function always runs instrumented). The output must equal a plain
 * build's. */
#include <stdio.h>
#include <stdlib.h>
#ifdef PLAIN_BUILD
#define EPCACHE_REGION_BEGIN(name) ((void)0)
#define EPCACHE_REGION_END() ((void)0)
#else
#include "epcache.h"
#endif

#define N 96 /* the arrays line-aligned: both builds split them into the same lines */
double A[N][N] __attribute__((aligned(64))), B[N][N] __attribute__((aligned(64))), C[N][N] __attribute__((aligned(64)));
static long calls;
static int constructed;

/* Registered once by each copy's listing: it must still run once. */
__attribute__((constructor)) static void setup(void) { constructed++; }

static int pick(int x) {
  switch (x & 7) {
  case 0: return 3;
  case 1: return 7;
  case 2: return 9;
  case 3: return 11;
  case 4: return 13;
  case 5: return 17;
  default: return 1;
  }
}

static long counter(void) {
  static long n;
  return ++n;
}

static void init(void) {
  for (int i = 0; i < N; i++)
    for (int j = 0; j < N; j++) {
      A[i][j] = (i * 7 + j) % 13;
      B[i][j] = (i + j * 3) % 11;
      C[i][j] = 0.0;
    }
  calls++;
}

void mm(void) {
  for (int i = 0; i < N; i++)
    for (int k = 0; k < N; k++) {
      double a = A[i][k];
      for (int j = 0; j < N; j++) C[i][j] += a * B[k][j];
    }
  calls++;
}

static long fib(int n) {
  calls++;
  return n < 2 ? n : fib(n - 1) + fib(n - 2);
}

typedef void (*kernel_fn)(void);
static kernel_fn kernels[] = {init, mm};

int main(int argc, char **argv) {
  int reps = argc > 1 ? atoi(argv[1]) : 1;
  for (int r = 0; r < reps; r++)
    for (int k = 0; k < 2; k++) kernels[k]();
  long sum = 0;
  EPCACHE_REGION_BEGIN("tail");
  for (int i = 0; i < 64; i++) sum += pick(i + (int)C[i % N][3]);
  EPCACHE_REGION_END();
  long first = counter();
  long second = counter();
  printf("%.1f %ld %ld %ld %ld %ld %d\n", C[5][7], calls, first, second, fib(15), sum,
         constructed);
  return 0;
}
