// The ProcessAllocator target has no API: linking it into an executable makes that executable allocate through
// jemalloc (on Linux) with the options in jemalloc_config.c.
#pragma once
