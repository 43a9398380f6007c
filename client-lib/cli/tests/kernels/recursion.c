/* A recursion 100 deep: each level writes X before its call and Y after it, so X and Y are
 * each written 100 times in all, whatever the nesting. */
double X[128], Y[128];

void descend(int depth) {
  if (depth == 0) return;
  X[depth] += 1.0;
  descend(depth - 1);
  Y[depth] += 1.0;
}

int main(void) {
  descend(100);
  return 0;
}
