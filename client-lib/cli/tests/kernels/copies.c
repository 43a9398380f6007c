/* Copies made through the C library's memory functions and a struct assignment, sizes known
   only at run time except the struct's: fill sets src, copy copies it to dst, shift moves dst
   up by one 64-byte line (overlapping), assign copies a 4096-byte struct. Prints checks. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

unsigned char src[8192] __attribute__((aligned(64)));
unsigned char dst[8192] __attribute__((aligned(64)));
struct block {
  unsigned char bytes[4096];
};

__attribute__((noinline)) void fill(size_t n) { memset(src, 7, n); }

__attribute__((noinline)) void copy(size_t n) { memcpy(dst, src, n); }

__attribute__((noinline)) void shift(size_t n) { memmove(dst + 64, dst, n - 64); }

__attribute__((noinline)) void assign(void) { *(struct block *)dst = *(struct block *)src; }

int main(int argc, char **argv) {
  size_t n = argc > 1 ? (size_t)atol(argv[1]) : sizeof src;
  fill(n);
  copy(n);
  dst[0] = 1;
  shift(n);
  assign();
  printf("%d %d %d\n", dst[64], dst[8191], dst[0]);
  return 0;
}
