/* A kernel in a shared library (built with `epcache cc -- gcc -fPIC -shared`): its function is
 * a region and its global a data structure, named from the library's own debug information. */
double L[8192];

void lib_sweep(void) {
  for (int i = 0; i < 8192; i++) L[i] += 1.0;
}
