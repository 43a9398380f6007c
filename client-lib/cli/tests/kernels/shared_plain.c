/* A library built plainly with -g, not with capture: the runtime must not read it (its
 * function is no region, its global no data structure). */
double P[1024];

void plain_touch(void) {
  for (int i = 0; i < 1024; i++) P[i] += 1.0;
}

double *plain_array(void) { return P; }
