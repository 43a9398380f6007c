/* A producer hands items through a small ring to a consumer thread that serves for ever: it is
 * detached and never joined, so it never hands its counts on. The producer waits until the
 * consumer took everything, so the two threads' accesses to the ring interleave throughout. */
#include <pthread.h>
#include <stdio.h>

#define SLOTS 64
#define ITEMS 20000

static long ring[SLOTS];
static int head, tail, count;
static long taken, taken_sum;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t not_full = PTHREAD_COND_INITIALIZER;
static pthread_cond_t not_empty = PTHREAD_COND_INITIALIZER;

__attribute__((noinline)) void *produce(void *unused) {
    (void)unused;
    for (long i = 0; i < ITEMS; i++) {
        pthread_mutex_lock(&lock);
        while (count == SLOTS) pthread_cond_wait(&not_full, &lock);
        ring[head] = i;
        head = (head + 1) % SLOTS;
        count++;
        pthread_cond_signal(&not_empty);
        pthread_mutex_unlock(&lock);
    }
    pthread_mutex_lock(&lock);
    while (count > 0) pthread_cond_wait(&not_full, &lock);
    pthread_mutex_unlock(&lock);
    return NULL;
}

__attribute__((noinline)) void *consume(void *unused) {
    (void)unused;
    for (;;) {
        pthread_mutex_lock(&lock);
        while (count == 0) pthread_cond_wait(&not_empty, &lock);
        taken_sum += ring[tail];
        taken++;
        tail = (tail + 1) % SLOTS;
        count--;
        pthread_cond_signal(&not_full);
        pthread_mutex_unlock(&lock);
    }
    return NULL;
}

int main(void) {
    pthread_t server, producer;
    pthread_create(&server, NULL, consume, NULL);
    pthread_detach(server);
    pthread_create(&producer, NULL, produce, NULL);
    pthread_join(producer, NULL);
    printf("%ld %ld\n", taken, taken_sum);
    return 0;
}
