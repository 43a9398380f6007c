// A template's two instances, declared on one line: one region (regions are keyed by their
// declaration's line), named by both.
#include <cstdio>
#include <vector>
template <typename T> __attribute__((noinline)) T tsum(const std::vector<T> &v) { T s = 0; for (T x : v) s += x; return s; }
int main() {
  std::vector<double> d(4096, 1.0);
  std::vector<float> f(8192, 2.0f);
  std::printf("%.0f\n", tsum(d) + double(tsum(f)));
  return 0;
}
