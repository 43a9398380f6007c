/* A program whose data structures change behaviour over time, in the manner of DTrack (Agaram et
 * al., "Phase Analysis of Program Memory Behavior"): misses per data structure per interval show
 * phases that whole-run totals hide.
 *
 * The run is INTERVALS marked iterations (marker "interval"), each one phase:
 *   stream  reads the next 256 KB chunk of X (4 MB) once, and a 16 KB window of Y that stays in
 *           the L1 all along: X misses once per line, Y hardly at all;
 *   stride  reads one double per 64 B line across all of Y (256 KB) four times: Y misses on every
 *           access in a 64 KB L1, X is idle;
 *   chase   follows a linked list through 4096 nodes of one malloc'd block, linked in shuffled
 *           order: the heap block, named by its allocation site, misses on every node.
 * The schedule is 4 x stream, 4 x stride, 4 x stream, 4 x chase, twice over. Each phase is a
 * function (an automatic region), so a whole-run report already splits the run by phase; a tool
 * stepping from interval to interval gets the timeline.
 *
 * DTrack simulated a 64 KB, 2-way, 64 B-line DL1 and a 512 KB direct-mapped L2; the tests use the
 * same shapes. Data structures: the globals X and Y, and the nodes' block (named by its
 * allocation site by epcache; DTrack grouped every allocation of a site, epcache names blocks of
 * 4 KB and more, so the nodes share one block here). */
#include <stdio.h>
#include <stdlib.h>

#include "markers.h"

#define X_LEN (1 << 19)    /* 4 MB of doubles */
#define CHUNK (1 << 15)    /* 256 KB of X per stream interval */
#define Y_LEN (1 << 15)    /* 256 KB of doubles */
#define Y_WINDOW (1 << 11) /* 16 KB of Y that stream reads */
#define LINE_DOUBLES 8
#define STRIDE_PASSES 4
#define NODES 4096
#define CHASE_PASSES 4
#define INTERVALS 32

/* Line-aligned, so the per-line miss counts the tests expect do not depend on where the linker
 * puts them (the runtime linked beside them moves them by its own size). */
double X[X_LEN] __attribute__((aligned(64)));
double Y[Y_LEN] __attribute__((aligned(64)));

struct node {
    struct node *next;
    long value;
    char pad[48]; /* one node per 64 B line */
};

struct node *nodes;     /* one heap block: DTrack names it by its allocation site */
struct node *list_head; /* the walk's first node */

KERNEL void init(void)
{
    for (long e = 0; e < X_LEN; e++)
        X[e] = (double)(e % 7);
    for (long e = 0; e < Y_LEN; e++)
        Y[e] = (double)(e % 5);
}

/* Allocates the nodes (one allocation site) and links them in a shuffled order, so a walk jumps
 * around the block as the walk of a pointer structure does. */
KERNEL void build_list(void)
{
    nodes = malloc(NODES * sizeof(struct node));
    int *order = malloc(NODES * sizeof(int));
    if (!nodes || !order)
        abort();
    for (int n = 0; n < NODES; n++) {
        order[n] = n;
        nodes[n].value = n % 3;
    }
    unsigned seed = 12345;
    for (int n = NODES - 1; n > 0; n--) {
        seed = seed * 1103515245u + 12345u;
        int other = (int)((seed >> 8) % (unsigned)(n + 1));
        int t = order[n];
        order[n] = order[other];
        order[other] = t;
    }
    for (int n = 0; n < NODES - 1; n++)
        nodes[order[n]].next = &nodes[order[n + 1]];
    nodes[order[NODES - 1]].next = NULL;
    list_head = &nodes[order[0]];
    free(order);
}

KERNEL double phase_stream(int chunk)
{
    double s = 0.0;
    const double *x = X + (long)chunk * CHUNK;
    for (long e = 0; e < CHUNK; e++)
        s += x[e] * Y[e % Y_WINDOW];
    return s;
}

KERNEL double phase_stride(void)
{
    double s = 0.0;
    for (int pass = 0; pass < STRIDE_PASSES; pass++)
        for (long e = 0; e < Y_LEN; e += LINE_DOUBLES)
            s += Y[e];
    return s;
}

KERNEL double phase_chase(void)
{
    long s = 0;
    for (int pass = 0; pass < CHASE_PASSES; pass++)
        for (const struct node *p = list_head; p; p = p->next)
            s += p->value;
    return (double)s;
}

int main(void)
{
    init();
    build_list();
    double total = 0.0;
    int chunk = 0;
    for (int it = 0; it < INTERVALS; it++) {
        EPCACHE_REGION_BEGIN("interval");
        switch (it / 4 % 4) {
        case 0:
        case 2:
            total += phase_stream(chunk++);
            break;
        case 1:
            total += phase_stride();
            break;
        default:
            total += phase_chase();
        }
        EPCACHE_REGION_END();
    }
    printf("phases: %d intervals, %d stream chunks, total %.1f\n", INTERVALS, chunk, total);
    return chunk * CHUNK == X_LEN ? 0 : 1;
}
