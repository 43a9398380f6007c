/* Region markers and kernel attributes shared by the C examples.
 *
 * The markers are epcache's (monitor-lib/include/epcache.h) when that header is on the include
 * path, which `epcache cc` arranges, and nothing otherwise: a plain `gcc` build of the same source
 * then runs under Cachegrind for comparison, with every kernel function's code unchanged.
 *
 * KERNEL keeps each loop nest a function of its own (an automatic epcache region, one `fn=` entry
 * in Cachegrind's output): gcc would otherwise inline a static function called once, or clone it
 * for constant arguments. */
#ifndef EPCACHE_EXAMPLES_MARKERS_H
#define EPCACHE_EXAMPLES_MARKERS_H

#if defined(__has_include)
#if __has_include(<epcache.h>)
#include <epcache.h>
#endif
#endif

#ifndef EPCACHE_REGION_BEGIN
#define EPCACHE_REGION_BEGIN(name) ((void)0)
#define EPCACHE_REGION_END() ((void)0)
#endif

#define KERNEL __attribute__((noipa))

#endif
