// C++ with no exception handling of its own (no try, no object with a destructor on a path
// that can throw): the plain compilation has no exception tables, the instrumented one does
// (TSan's exit-hook cleanups), and with them gcc's DW.ref.__gxx_personality_v0 word.
#include <cstdio>

// Line-aligned: the merged and the instrumented-only builds place their data differently, and
// an array that starts mid-line in one of them misses one more line per sweep.
alignas(64) double grid[200][200];

struct Sweeper {
  int n;
  double sum() const {
    double s = 0;
    for (int i = 0; i < n; i++)
      for (int j = 0; j < n; j++) s += grid[i][j];
    return s;
  }
};

int main() {
  for (int i = 0; i < 200; i++)
    for (int j = 0; j < 200; j++) grid[i][j] = i + j;
  Sweeper s{200};
  std::printf("%.0f\n", s.sum());
  return 0;
}
