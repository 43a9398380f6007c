// C++ heap arrays named by their allocation sites: new[], two std::vectors declared with sizes in
// one line, one grown by push_back, an over-aligned new[]; and the wrappers' failure semantics.
// Lines matter: the test names the sites by line.
#include <cstdint>
#include <cstdio>
#include <new>
#include <vector>
constexpr long N = 20000;
struct alignas(64) Cell { double v[8]; };
__attribute__((noinline)) void sweep(double *x, long n) { for (long i = 0; i < n; i++) x[i] += 1.0; }
int main() {
  double *a = new double[N]();
  std::vector<double> v(N), u(2 * N);
  std::vector<double> w;
  for (long i = 0; i < N; i++) w.push_back(double(i));
  Cell *cells = new Cell[N / 8]();
  sweep(a, N);
  sweep(v.data(), N); sweep(u.data(), N);
  sweep(w.data(), N);
  sweep(cells[0].v, N);
  volatile std::size_t huge = std::size_t(1) << 58;
  bool threw = false;
  try {
    double *p = new double[huge];
    std::printf("%p\n", static_cast<void *>(p));
  } catch (const std::bad_alloc &) {
    threw = true;
  }
  double *q = new (std::nothrow) double[huge];
  std::printf("bad_alloc %d nothrow_null %d aligned %d\n", threw, q == nullptr,
              reinterpret_cast<std::uintptr_t>(cells) % 64 == 0);
  std::printf("%f\n", a[1] + v[2] + u[3] + w[3] + cells[4].v[0]);
  delete[] a;
  delete[] cells;
  return 0;
}
