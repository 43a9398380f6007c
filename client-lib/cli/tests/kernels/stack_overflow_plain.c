/* Recursion without end, built plainly (no capture) and linked into stack_overflow.c. */
int deeper(int n) {
  volatile char pad[512];
  pad[0] = (char)n;
  return deeper(n + 1) + pad[0];
}
