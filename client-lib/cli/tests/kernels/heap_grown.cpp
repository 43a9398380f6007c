// Two vectors grown on one line through push_back (line 8): their blocks are allocated in two
// template instances and cannot be told apart by the line.
#include <cstdio>
#include <vector>
int main() {
  std::vector<int> a;
  std::vector<double> b;
  for (int i = 0; i < 100000; i++) { a.push_back(i); b.push_back(2.0 * i); }
  std::printf("%zu %zu\n", a.size(), b.size());
  return 0;
}
