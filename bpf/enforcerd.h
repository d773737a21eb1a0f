/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What every enforcerd object includes, by subject:
 *
 *   consts.h   kernel constants (errno, modes, fs magics, ioctls, capabilities, devices)
 *   maps.h     the ceiling, its bits, and the maps user space pins and shares
 *   walk.h     the ancestor walk, its per-cgroup cache (resolve) and verdicts
 *   loop.h     (through walk.h) a bpf_loop()'s state, unknown to old verifiers
 *   event.h    the denial record, hook ids, and writing a record
 *   tally.h    counting denials, so that only the first of a kind is a record
 *   procfs.h   /proc/<pid> inodes and the tasks they name
 *   kernfs.h   cgroup2 inodes and the cgroups they belong to
 *   tamper.h   outside the sandbox, tamper records, kernel interface writes
 *
 * exec.h (shell ceiling state) and net.h (socket decisions) build on it.
 */
#ifndef ENFORCERD_H
#define ENFORCERD_H

#include "consts.h"
#include "maps.h"
#include "walk.h"
#include "event.h"
#include "procfs.h"
#include "kernfs.h"
#include "tamper.h"

#endif /* ENFORCERD_H */
