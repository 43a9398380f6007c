// Two lambdas of one signature in main, kept out of line: regions named as a demangler names
// them, main::{lambda(int)#1}::operator() and #2, each counting its own reads.
#include <cstdio>
#include <vector>
int main() {
  std::vector<double> x(16384, 2.0);
  std::vector<double> y(32768, 1.0);
  auto first = [&](int k) __attribute__((noinline)) { double s = 0; for (int i = 0; i < k; i++) s += x[i]; return s; };
  auto second = [&](int k) __attribute__((noinline)) { double s = 0; for (int i = 0; i < k; i++) s += y[i]; return s; };
  std::printf("%.1f\n", first(16384) + second(32768));
  return 0;
}
