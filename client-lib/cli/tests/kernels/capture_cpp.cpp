// C++ under `epcache cc`: threads, std::atomic, virtual calls (vptr hooks) and std::vector must stay correct.
#include <atomic>
#include <thread>
#include <vector>
#include <cstdio>
struct B { virtual int f() { return 1; } virtual ~B() {} };
struct D : B { int f() override { return 2; } };
std::atomic<long> n{0};
int main() {
  std::vector<std::thread> ts;
  for (int t = 0; t < 3; t++) ts.emplace_back([] { for (int i = 0; i < 10000; i++) n.fetch_add(1, std::memory_order_acq_rel); });
  for (auto &t : ts) t.join();
  B *b = new D; int r = b->f(); delete b;
  std::vector<int> v(1000, 1); long s = 0; for (int x : v) s += x;
  std::printf("%ld %d %ld\n", n.load(), r, s);
  return n.load() == 30000 && r == 2 && s == 1000 ? 0 : 1;
}
