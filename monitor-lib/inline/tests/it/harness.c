/* The differential test's harness (`differential.rs`): runs every variant of the inline
 * capture sequence, assembled (sites.s), over a fake thread block laid out by epcache-inline's
 * constants (block.s, layout.h), on the commands it reads from stdin, and prints what each
 * access changed: the hook calls, the table entries and batch records written, the batch
 * position, `in_miss` and the registers the sites left. Anything else written in the block is
 * printed as a stray write. */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "layout.h"

extern __thread unsigned char fake_block[BLOCK_BYTES];
extern uint64_t TAG_WORD_SYMBOL;
extern void (*const site_functions[])(uint64_t, uint64_t);
extern const uint64_t site_function_count;
/* Each site's code address (where its call returns to), by site number less one. */
extern const uint64_t site_returns[];
extern const uint64_t site_return_count;
/* Every site function stores the registers its last site left here before it returns. */
uint64_t observed_word, observed_mask;

static uint64_t batch[BATCH_RECORDS * RECORD_WORDS];
/* What the next hook call sets the tag word to (0: nothing), as a hook that syncs may. */
static uint64_t hook_sets_word;

#define WORD64(off) (*(uint64_t *)(fake_block + (off)))
#define WORD32(off) (*(uint32_t *)(fake_block + (off)))

/* The number of the site whose code address is `code`, 0 for none. */
static uint64_t site_number(uint64_t code) {
  for (uint64_t i = 0; i < site_return_count; i++)
    if (site_returns[i] == code) return i + 1;
  return 0;
}

static __attribute__((noinline)) void hook(unsigned size, int write, void *addr, uint64_t back) {
  printf("call %u %c %" PRIx64 " site %" PRIx64 "\n", size, write ? 'w' : 'r', (uint64_t)addr,
         site_number(back));
  if (hook_sets_word) {
    TAG_WORD_SYMBOL = hook_sets_word;
    hook_sets_word = 0;
  }
}

#define HOOKS(n)                                                                          \
  void __tsan_read##n(void *a);                                                           \
  void __tsan_write##n(void *a);                                                          \
  void __tsan_read##n(void *a) { hook(n, 0, a, (uint64_t)__builtin_return_address(0)); }  \
  void __tsan_write##n(void *a) { hook(n, 1, a, (uint64_t)__builtin_return_address(0)); }
HOOKS(1)
HOOKS(2)
HOOKS(4)
HOOKS(8)
HOOKS(16)

static int read_u64(uint64_t *v) { return scanf("%" SCNx64, v) == 1; }

int main(void) {
  static unsigned char block_before[BLOCK_BYTES];
  static uint64_t batch_before[BATCH_RECORDS * RECORD_WORDS];
  char cmd[4];
  uint64_t accesses = 0;
  while (scanf("%3s", cmd) == 1) {
    uint64_t a = 0, b = 0, c = 0, d = 0;
    switch (cmd[0]) {
    case 'W':
      read_u64(&TAG_WORD_SYMBOL);
      break;
    case 'S':
      read_u64(&a);
      WORD64(OFF_SYNCED_WORD) = a;
      break;
    case 'B':
      read_u64(&a), read_u64(&b);
      if (a > BATCH_RECORDS || b > BATCH_RECORDS) return 2;
      WORD64(OFF_BATCH_POS) = (uint64_t)(batch + a * RECORD_WORDS);
      WORD64(OFF_BATCH_END) = (uint64_t)(batch + b * RECORD_WORDS);
      break;
    case 'L':
      read_u64(&a), read_u64(&b), read_u64(&c), read_u64(&d);
      if (a >= WHOLE_SLOTS) return 2;
      WORD64(OFF_WHOLE_LO + a * 8) = b;
      WORD64(OFF_WHOLE_HI + a * 8) = c;
      WORD32(OFF_WHOLE_STRUCTURE + a * 4) = (uint32_t)d;
      break;
    case 'K':
      read_u64(&a);
      if (a < 1 || a > sizeof order_tables / sizeof order_tables[0]) return 2;
      memcpy(fake_block + OFF_ORDER_TABLES, order_tables[a - 1], TABLES_BYTES);
      break;
    case 'C':
      read_u64(&a);
      if (a >= TABLE_ENTRIES) return 2;
      memset(fake_block + TABLE_OFFSET + a * ENTRY_BYTES, 0, ENTRY_BYTES);
      break;
    case 'H':
      read_u64(&hook_sets_word);
      break;
    case 'A': {
      read_u64(&a), read_u64(&b), read_u64(&c);
      if (a >= site_function_count) return 2;
      memcpy(block_before, fake_block, BLOCK_BYTES);
      memcpy(batch_before, batch, sizeof batch);
      printf("A %" PRIu64 "\n", accesses++);
      site_functions[a](b, c);
      for (unsigned e = 0; e < TABLE_ENTRIES; e++) {
        unsigned char *now = fake_block + TABLE_OFFSET + e * ENTRY_BYTES;
        if (memcmp(now, block_before + TABLE_OFFSET + e * ENTRY_BYTES, ENTRY_BYTES) == 0) continue;
        printf("entry %u", e);
        for (unsigned w = 0; w < ENTRY_BYTES / 8; w++) printf(" %" PRIx64, ((uint64_t *)now)[w]);
        printf("\n");
      }
      for (unsigned r = 0; r < BATCH_RECORDS; r++) {
        uint64_t *now = batch + r * RECORD_WORDS;
        if (memcmp(now, batch_before + r * RECORD_WORDS, RECORD_BYTES) == 0) continue;
        printf("record %u", r);
        for (unsigned w = 0; w < RECORD_WORDS; w++)
          printf(" %" PRIx64, w == RECORD_CODE_ADDRESS ? site_number(now[w]) : now[w]);
        printf("\n");
      }
      for (unsigned off = 0; off < BLOCK_BYTES; off++) {
        int in_table = off >= TABLE_OFFSET && off < TABLE_OFFSET + TABLE_BYTES;
        int is_pos = off >= OFF_BATCH_POS && off < OFF_BATCH_POS + 8;
        if (!in_table && !is_pos && off != OFF_IN_MISS && fake_block[off] != block_before[off])
          printf("stray %u\n", off);
      }
      printf("after pos %" PRIx64 " in_miss %u word %" PRIx64 " mask %" PRIx64 "\n",
             WORD64(OFF_BATCH_POS) - (uint64_t)batch, (unsigned)fake_block[OFF_IN_MISS],
             observed_word, observed_mask);
      break;
    }
    default:
      return 2;
    }
  }
  return 0;
}
