// A C++ method and a free function, each holding an OpenMP loop: g++ names their outlined
// bodies by the functions' linkage names, and each function counts its whole team.
#include <cstdio>
#include <vector>

namespace solver {
struct Axpy {
  std::vector<double> y;
  explicit Axpy(int n) : y(n, 1.0) {}
  __attribute__((noinline)) void run(const std::vector<double> &x, double a) {
    const int n = (int)y.size();
#pragma omp parallel for schedule(static)
    for (int i = 0; i < n; i++) y[i] += a * x[i];
  }
};
}  // namespace solver

__attribute__((noinline)) double total(const std::vector<double> &v) {
  double s = 0;
  const int n = (int)v.size();
#pragma omp parallel for schedule(static) reduction(+ : s)
  for (int i = 0; i < n; i++) s += v[i];
  return s;
}

int main() {
  const int n = 4096;
  std::vector<double> x(n, 2.0);
  solver::Axpy ax(n);
  for (int r = 0; r < 3; r++) ax.run(x, 0.5);
  std::printf("%.1f\n", total(ax.y));
  return 0;
}
