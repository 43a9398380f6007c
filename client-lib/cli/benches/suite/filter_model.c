/* The repeat-hit filter's model, linked in place of a sanitizer runtime: every access a kernel
 * built with `-fsanitize=thread` makes goes through the model of filter tables of several
 * shapes, and at exit the counts of accesses each would have sent to the miss path (a record
 * or a hook call) go to the file named by FILTER_MODEL_OUT.
 *
 * FILTER_MODEL_L1 is "line_bytes,sets,ways,table_entries" (powers of two). Shapes:
 * - today: as `capture/filter.rs`, one entry per table slot, shared by the sets beyond the
 *   table by their low bits, holding the 4 most recently used lines of those sets (at most
 *   `ways` of them);
 * - k = 1, 2, 4, 8: one entry per set holding its k most recently used lines (at most `ways`
 *   of them), any of which answers an access: the miss path runs only for the other lines. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define SHAPES 4
#define TODAY_SLOTS 4
static const unsigned slots_of[SHAPES] = {1, 2, 4, 8};

static unsigned line_bits, sets, ways, table_entries;
static uint64_t *today, *recent[SHAPES];
static uint64_t accesses, straddles, today_misses, misses[SHAPES];

static unsigned log2_of(unsigned n) {
  unsigned b = 0;
  while ((1u << b) < n) b++;
  return b;
}

static void set_up(void) {
  const char *spec = getenv("FILTER_MODEL_L1");
  unsigned line = 0;
  if (!spec || sscanf(spec, "%u,%u,%u,%u", &line, &sets, &ways, &table_entries) != 4 || line == 0 ||
      sets == 0 || ways == 0 || table_entries == 0) {
    fprintf(stderr, "filter model: FILTER_MODEL_L1 must be line_bytes,sets,ways,table_entries\n");
    exit(2);
  }
  line_bits = log2_of(line);
  today = calloc((size_t)table_entries * TODAY_SLOTS, sizeof *today);
  for (int s = 0; s < SHAPES; s++) recent[s] = calloc((size_t)sets * slots_of[s], sizeof(uint64_t));
}

/* An entry's lines, most recent first: whether `tag` is one of the first `usable`; either way
 * `tag` becomes the most recent. */
static int touch(uint64_t *entry, unsigned usable, uint64_t tag) {
  unsigned j = 0;
  while (j < usable && entry[j] != tag) j++;
  int hit = j < usable;
  if (!hit) j = usable - 1;
  memmove(entry + 1, entry, j * sizeof *entry);
  entry[0] = tag;
  return hit;
}

static void model(uint64_t addr, uint64_t size) {
  if (!today) set_up();
  accesses++;
  uint64_t line = addr >> line_bits;
  if ((addr + size - 1) >> line_bits != line) {
    straddles++;
    return;
  }
  uint64_t tag = line + 1; /* 0 is an empty slot */
  unsigned today_usable = TODAY_SLOTS < ways ? TODAY_SLOTS : ways;
  if (!touch(today + (line & (table_entries - 1)) * TODAY_SLOTS, today_usable, tag)) today_misses++;
  uint64_t set = line & (sets - 1);
  for (int s = 0; s < SHAPES; s++) {
    unsigned k = slots_of[s], usable = k < ways ? k : ways;
    if (!touch(recent[s] + set * k, usable, tag)) misses[s]++;
  }
}

__attribute__((destructor)) static void write_counts(void) {
  const char *path = getenv("FILTER_MODEL_OUT");
  FILE *out = path ? fopen(path, "w") : NULL;
  if (!out) {
    fprintf(stderr, "filter model: cannot write FILTER_MODEL_OUT\n");
    return;
  }
  fprintf(out, "%lu %lu %lu", (unsigned long)accesses, (unsigned long)straddles,
          (unsigned long)today_misses);
  for (int s = 0; s < SHAPES; s++) fprintf(out, " %lu", (unsigned long)misses[s]);
  fprintf(out, "\n");
  fclose(out);
}

#define HOOKS(n)                                                                             \
  void __tsan_read##n(void *a) { model((uint64_t)a, n); }                                    \
  void __tsan_write##n(void *a) { model((uint64_t)a, n); }                                   \
  void __tsan_unaligned_read##n(void *a) { model((uint64_t)a, n); }                          \
  void __tsan_unaligned_write##n(void *a) { model((uint64_t)a, n); }                         \
  void __tsan_read##n##_pc(void *a, void *pc) { (void)pc; model((uint64_t)a, n); }          \
  void __tsan_write##n##_pc(void *a, void *pc) { (void)pc; model((uint64_t)a, n); }
HOOKS(1)
HOOKS(2)
HOOKS(4)
HOOKS(8)
HOOKS(16)

void __tsan_read_range(void *a, unsigned long n) {
  for (unsigned long o = 0; o < n; o += 8) model((uint64_t)a + o, n - o < 8 ? n - o : 8);
}
void __tsan_write_range(void *a, unsigned long n) { __tsan_read_range(a, n); }
void __tsan_init(void) {}
void __tsan_func_entry(void *pc) { (void)pc; }
void __tsan_func_exit(void) {}
void __tsan_vptr_update(void **a, void *b) { (void)a; (void)b; }
void __tsan_vptr_read(void **a) { (void)a; }
