/* Threads and C11 atomics under `epcache cc`: the result must stay right. */
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#define THREADS 4
#define ITERATIONS 20000
#define N 8192

int data[N];
_Atomic long counter;
_Atomic int maximum;
__int128 wide;
long partial[THREADS];

static void *work(void *arg) {
  long id = (long)arg;
  long sum = 0;
  for (int i = 0; i < ITERATIONS; i++) {
    atomic_fetch_add_explicit(&counter, 1, memory_order_relaxed);
    __atomic_fetch_add(&wide, 1, __ATOMIC_SEQ_CST);
  }
  for (int i = id; i < N; i += THREADS) {
    sum += data[i];
    int seen = atomic_load_explicit(&maximum, memory_order_acquire);
    while (data[i] > seen &&
           !atomic_compare_exchange_weak_explicit(&maximum, &seen, data[i], memory_order_acq_rel,
                                                  memory_order_acquire)) {
    }
  }
  partial[id] = sum;
  return NULL;
}

int main(void) {
  pthread_t threads[THREADS];
  for (int i = 0; i < N; i++) data[i] = (i * 7919) % 10007;
  for (long t = 0; t < THREADS; t++) pthread_create(&threads[t], NULL, work, (void *)t);
  for (int t = 0; t < THREADS; t++) pthread_join(threads[t], NULL);
  long total = 0, expected = 0;
  int expected_max = 0;
  for (int t = 0; t < THREADS; t++) total += partial[t];
  for (int i = 0; i < N; i++) {
    expected += data[i];
    if (data[i] > expected_max) expected_max = data[i];
  }
  int ok = atomic_load(&counter) == (long)THREADS * ITERATIONS &&
           __atomic_load_n(&wide, __ATOMIC_SEQ_CST) == (__int128)THREADS * ITERATIONS &&
           total == expected && atomic_load(&maximum) == expected_max;
  printf("%s counter=%ld total=%ld max=%d\n", ok ? "OK" : "WRONG", atomic_load(&counter), total,
         atomic_load(&maximum));
  return ok ? 0 : 1;
}
