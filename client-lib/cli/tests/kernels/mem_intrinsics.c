/* The calls newer clang releases make for memcpy, memmove and memset under -fsanitize=thread,
   made by hand: each must do the operation and count its ranges, one access per 64-byte line.
   Prints the copied bytes' checks. */
#include <stddef.h>
#include <stdio.h>

void *__tsan_memcpy(void *dst, const void *src, size_t size);
void *__tsan_memmove(void *dst, const void *src, size_t size);
void *__tsan_memset(void *dst, int byte, size_t size);

unsigned char src[8192] __attribute__((aligned(64)));
unsigned char dst[8192] __attribute__((aligned(64)));

__attribute__((noinline)) void fill(void) { __tsan_memset(src, 7, sizeof src); }

__attribute__((noinline)) void copy(void) { __tsan_memcpy(dst, src, sizeof dst); }

/* Moves all but the last line of dst up by one line (overlapping). */
__attribute__((noinline)) void shift(void) { __tsan_memmove(dst + 64, dst, sizeof dst - 64); }

int main(void) {
  fill();
  copy();
  dst[0] = 1;
  shift();
  printf("%d %d %d\n", dst[64], dst[8191], src[100]);
  return 0;
}
