/* The second static `init` (see same_name_a.c): called twice, over y. */
extern double y[4096];

static __attribute__((noinline)) void init(void) {
  for (int i = 0; i < 4096; i++) y[i] += 2.0 * i;
}

void run_b(void) {
  init();
  init();
}
