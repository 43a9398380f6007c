/* Loads and stores of every size the TSan hooks report (1, 2, 4, 8 and 16 bytes), aligned and
 * unaligned, some straddling two cache lines, from two threads: what `epcache cc`'s inline
 * repeat-hit test must count exactly as the hook calls it stands in front of do. Prints a
 * checksum so every build can be compared with the plain one. */
#include <pthread.h>
#include <stdio.h>
#include <string.h>

#define N 4096

/* Every array starts a cache line, so the builds a test compares (inline, calls, plain), whose
 * other data differs in size, map each array to lines alike: a shifted array spans one line
 * more and misses differently. */
#define LINE_ALIGNED __attribute__((aligned(64)))

LINE_ALIGNED unsigned char bytes[N];
LINE_ALIGNED unsigned short halves[N];
LINE_ALIGNED unsigned int words[N];
LINE_ALIGNED double doubles[N];
LINE_ALIGNED __int128 wide[N / 4];

/* Fields at odd offsets: gcc reports them with the unaligned hooks, and with 64-byte lines
 * some of them straddle two lines. */
struct __attribute__((packed)) odd {
  char tag;
  unsigned int count;
  double value;
  unsigned short small;
};
LINE_ALIGNED struct odd odds[N / 8];

/* One array per thread, written and read back by its own thread, line by line: mostly repeat
 * hits. */
#define LANE_ROUNDS 20
LINE_ALIGNED double lanes[2][N];

__attribute__((noinline)) unsigned long scan(int rounds) {
  unsigned long sum = 0;
  for (int r = 0; r < rounds; r++) {
    for (int i = 0; i < N; i++) {
      bytes[i] = (unsigned char)(bytes[i] + i + r);
      halves[i] = (unsigned short)(halves[i] + bytes[i]);
      words[i] += halves[i];
      doubles[i] += 0.5 * words[i];
      sum += bytes[i] + halves[i] + words[i];
    }
    for (int i = 0; i < N / 4; i++) {
      wide[i] += (__int128)words[i] << 64 | words[i];
      sum += (unsigned long)(wide[i] >> 64);
    }
    for (int i = 0; i < N / 8; i++) {
      odds[i].count += (unsigned int)i;
      odds[i].value += odds[i].count;
      odds[i].small = (unsigned short)(odds[i].small + odds[i].tag + 1);
      sum += odds[i].count + odds[i].small;
    }
  }
  return sum;
}

static void *lane(void *arg) {
  double *a = lanes[(long)arg];
  for (int r = 0; r < LANE_ROUNDS; r++)
    for (int i = 0; i < N; i++) a[i] = a[i] * 0.5 + i;
  return NULL;
}

int main(void) {
  for (int i = 0; i < N / 8; i++) odds[i].tag = (char)i;
  unsigned long sum = scan(3);
  pthread_t threads[2];
  for (long t = 0; t < 2; t++) pthread_create(&threads[t], NULL, lane, (void *)t);
  for (int t = 0; t < 2; t++) pthread_join(threads[t], NULL);
  double total = 0;
  for (int i = 0; i < N; i++) total += lanes[0][i] + lanes[1][i] + doubles[i];
  printf("%lu %.1f\n", sum, total);
  return 0;
}
