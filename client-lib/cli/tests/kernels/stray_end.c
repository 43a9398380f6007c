/* Unbalanced markers: `closes` ends a region it never began, `opens` returns with one open.
 * The runtime ignores the first, closes the second, and says the first with its line. */
#include <epcache.h>
#include <stdio.h>

double a[1024];

__attribute__((noinline)) void closes(void) {
  for (int i = 0; i < 1024; i++) a[i] = 2.0 * i;
  EPCACHE_REGION_END();
}

__attribute__((noinline)) void opens(void) {
  EPCACHE_REGION_BEGIN("left_open");
  for (int i = 0; i < 1024; i++) a[i] += 1.0;
}

int main(void) {
  closes();
  opens();
  printf("%g\n", a[3]);
  return 0;
}
