// A C++ program whose only use of libstdc++ is the allocation of a global vector (operator
// new and delete, inlined from the headers, called before main): the library must stay
// needed although the program's references to the operators go to epcache's wrappers.
#include <vector>

#define N 4096

std::vector<double> v(N);

__attribute__((noinline)) void sweep(double *x) {
  for (int i = 0; i < N; i++) x[i] += 1.0;
}

int main() {
  sweep(v.data());
  return v[0] == 1.0 ? 0 : 5;
}
