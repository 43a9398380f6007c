// A namespace's std::vector, sized where it is declared (line 5): its elements are a heap block.
#include <cstdio>
#include <vector>
namespace sim {
std::vector<double> gvec(20000, 1.0);
}
__attribute__((noinline)) double total() { double s = 0; for (int i = 0; i < 20000; i++) s += sim::gvec[i]; return s; }
int main() { std::printf("%.1f\n", total()); return 0; }
