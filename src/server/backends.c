/* SPDX-License-Identifier: MIT */
/*
 * backends.c - the one place that lists the backends built into the server.
 *
 * Must never hold backend logic: a name and a table per line.
 */
#include <string.h>
#include "backend.h"

extern const struct ur_backend_ops ur_backend_sfs;
extern const struct ur_backend_ops ur_backend_none;

static const struct ur_backend_ops *const backends[] = {
	&ur_backend_sfs,
	&ur_backend_none,
};

const struct ur_backend_ops *ur_backend_find(const char *name)
{
	for (size_t i = 0; i < sizeof(backends) / sizeof(backends[0]); i++)
		if (strcmp(backends[i]->name, name) == 0)
			return backends[i];
	return NULL;
}

const char *ur_backend_names(void)
{
	return "sfs none";
}
