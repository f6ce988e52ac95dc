/* recipe_zk_names.h: which children of a ZooKeeper lock node contend, in which
 * order, and whom each one waits for (recipe_zk_names.c): the names Curator and
 * kazoo give their nodes, read by recipe_zk.c. Pure, so that unit tests reach it
 * (test_recipe_names). */
#ifndef IK_RECIPE_ZK_NAMES_H
#define IK_RECIPE_ZK_NAMES_H

#include "recipe.h"

#include <stddef.h>
#include <stdint.h>

/* Contenders on ZooKeeper: a child name that holds one of the kind's patterns
 * followed by ZooKeeper's sequence at its end (Java's "%010d" of a signed 32-bit
 * counter: "0000000042", "-000000005", "-2147483648"). */
typedef struct ik__contender {
    const char *name; /* points into the caller's array of names */
    int32_t seq;      /* the trailing sequence, as ZooKeeper's signed 32-bit int */
    int writer;       /* READ/WRITE kinds: 1 for a __WRIT__ node */
    int64_t czxid;    /* the node's creation zxid: 0 from ik__contender_parse, set by
                         the caller when ik__contenders_need_czxid says so */
} ik__contender;

/* Parses name as a contender of kind: 1 (and *c filled) or 0 (not one). MUTEX
 * counts "-lock-" and "__lock__" (kazoo) names; READ and WRITE count "__READ__" and
 * "__WRIT__" names; LATCH counts "latch-" names. Only the exact "%010d" forms count. */
int ik__contender_parse(ik__lock_kind kind, const char *name, ik__contender *c);
/* 1 if the sequences of v do not give their creation order (one of them is
 * 2147483647 or negative: the parent's counter reached its end), so that the caller
 * must fill every czxid and sort with use_czxid = 1; else 0. */
int ik__contenders_need_czxid(const ik__contender *v, size_t n);
/* Sorts contenders in creation order: by sequence (use_czxid = 0, valid when
 * ik__contenders_need_czxid is 0) or by czxid; ties by name. */
void ik__contenders_sort(ik__contender *v, size_t n, int use_czxid);
/* Index in v of the contender our node (by name) must wait for, -1 if none (we
 * hold it), or -2 if our node is not among them. A writer, mutex or latch waits
 * for the contender just ahead; a reader for the nearest writer ahead. */
int ik__contender_blocker(ik__lock_kind kind, const ik__contender *v, size_t n, const char *ours);

/* The name of the node a contender of kind creates in layout (ZooKeeper appends the
 * sequence where the node is SEQUENTIAL), and the prefix that finds it again after a
 * create whose answer was lost, for the attempt's uuid (ik__uuid4's form):
 *   Curator's (every kind but a kazoo layout's): "_c_<uuid>-" + lock- | __READ__ |
 *     __WRIT__ | latch- | lease-, the prefix "_c_<uuid>-"
 *   kazoo's semaphore queue: "<hex>__lock__", its prefix too
 *   kazoo's semaphore lease: "<hex>" (not sequential), its prefix too
 * (<hex>: the uuid's 32 hex digits, as Python's uuid4().hex). 0, or -1 if len is too
 * small. */
int ik__zk_node_name(ik__lock_kind kind, ik_semaphore_layout layout, const char *uuid, char *name,
                     size_t name_len, char *prefix, size_t prefix_len);

#endif
