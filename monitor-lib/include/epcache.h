#ifndef EPCACHE_H
#define EPCACHE_H
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif
void epcache_region_begin(const char *name);
void epcache_region_end(void);
void epcache_register(const char *name, const void *addr, uint64_t bytes);
void epcache_unregister(const void *addr);
#ifdef __cplusplus
}
#endif
#define EPCACHE_REGION_BEGIN(name) epcache_region_begin(name)
#define EPCACHE_REGION_END() epcache_region_end()
#endif
