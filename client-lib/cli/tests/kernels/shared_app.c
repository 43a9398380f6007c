/* Calls the captured shared library's kernel (`shared_lib.c`) twice and the plain one's
 * (`shared_plain.c`) once, and writes the plain library's array itself, through the pointer
 * the library hands out: those writes are counted, but the array is named only if the runtime
 * read the plain library, which it must not. */
#include <stdio.h>

void lib_sweep(void);
void plain_touch(void);

double *plain_array(void);
double A[4096];

int main(void) {
  for (int i = 0; i < 4096; i++) A[i] = i;
  lib_sweep();
  lib_sweep();
  plain_touch();
  double *p = plain_array();
  for (int i = 0; i < 1024; i++) p[i] = 2.0;
  printf("ok\n");
  return 0;
}
