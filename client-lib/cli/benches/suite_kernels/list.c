/* Pointer chasing: a walk of a linked list whose nodes lie in a heap pool in shuffled order. */
#include "common.h"
#define NODES (1 << 20)
struct node {
  struct node *next;
  long value;
};

int main(int argc, char **argv) {
  int reps = reps_of(argc, argv);
  /* 2 MiB-aligned as the other kernels' arrays (common.h). */
  struct node *pool = aligned_alloc(2 * 1024 * 1024, sizeof(struct node) * NODES);
  /* The order too: where a plain malloc put it moved with the size of the runtime's thread block. */
  int *order = aligned_alloc(2 * 1024 * 1024, sizeof(int) * NODES);
  if (!pool || !order) return 1;
  for (int i = 0; i < NODES; i++) order[i] = i;
  unsigned long x = 88172645463325252UL;
  for (int i = NODES - 1; i > 0; i--) {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    int j = (int)(x % (unsigned long)(i + 1));
    int t = order[i];
    order[i] = order[j];
    order[j] = t;
  }
  for (int i = 0; i < NODES; i++) {
    pool[order[i]].next = &pool[order[(i + 1) % NODES]];
    pool[order[i]].value = i % 1000;
  }
  long sum = 0;
  for (int r = 0; r < reps; r++) {
    struct node *p = &pool[order[0]];
    for (int i = 0; i < NODES; i++) {
      sum += p->value;
      p = p->next;
    }
  }
  printf("%ld\n", sum);
  free(order);
  free(pool);
  return 0;
}
