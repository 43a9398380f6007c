// C++ a dual build must keep right: inline and template functions in COMDAT groups, constructor
// aliases, virtual calls, and exceptions whose landing pads sit in the cold part gcc splits off
// main (each copy of main must land in its own). The output must equal a plain build's.
#include <algorithm>
#include <iostream>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

struct Shape {
  virtual ~Shape() = default;
  virtual double area() const = 0;
};
struct Square : Shape {
  double side;
  explicit Square(double s) : side(s) {}
  double area() const override { return side * side; }
};

template <typename T> T total(const std::vector<T> &v) {
  T sum{};
  for (const auto &x : v) sum += x;
  return sum;
}

static int checked(int x) {
  if (x > 5) throw std::runtime_error("too big: " + std::to_string(x));
  return x;
}

int main() {
  std::map<std::string, int> counts;
  std::vector<double> values;
  for (int i = 0; i < 2000; i++) {
    counts["k" + std::to_string(i % 37)] += i;
    values.push_back(i * 0.5);
  }
  std::sort(values.begin(), values.end(), [](double a, double b) { return a > b; });
  Square square(3);
  const Shape &shape = square;
  int caught = 0, sum = 0;
  for (int i = 0; i < 10; i++) {
    try {
      sum += checked(i);
    } catch (const std::exception &e) {
      caught += static_cast<int>(e.what()[0] == 't');
    }
  }
  std::cout << counts.size() << " " << total(values) << " " << shape.area() << " " << caught
            << " " << sum << "\n";
  return 0;
}
