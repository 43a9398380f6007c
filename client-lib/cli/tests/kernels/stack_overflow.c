/* Sweeps X twice, then recurses without end in code built without capture
 * (stack_overflow_plain.c, the way a library's recursion would): the stack overflows in the
 * program's code, and the crash handler, on its alternate stack, writes the report. */
double X[4096];

int deeper(int n);

void sweep(void) {
  for (int i = 0; i < 4096; i++) X[i] += 1.0;
}

int main(void) {
  sweep();
  sweep();
  return deeper(0);
}
