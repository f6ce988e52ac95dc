/* zk_hazards.h: the store hazard checks of the zk:// backend (zk_hazards.c;
 * docs/hazards.md, "ZooKeeper"). They judge the server the session is connected
 * to, through the session (a probe node, /zookeeper/config) and the server's
 * four-letter words (srvr, conf, mntr, isro), and gate the backend's writes: the
 * ops table (backend_zk.c) sends slot takes, slot renewals and counter advances
 * through the gated calls below. Not a public API. */
#ifndef IK_ZK_HAZARDS_H
#define IK_ZK_HAZARDS_H

#include "backend.h"

#include <stdint.h>

/* Sets up the checks of be (an open zk:// backend, connected) and runs them once:
 * 0, IK_EUNSAFE (a check refused; why names it; the caller refuses to open unless
 * o->check_only), IK_ENOMEM or IK_ESTORE (why says why). */
int ik__zk_hazards_open(ik__backend *be, const ik_coord_options *o, char *why, size_t why_len);
/* Before ik__zk_client_close: stops listening to the session. NULL-safe. */
void ik__zk_hazards_close(ik__backend *be);

/* The seam's hazards_check (backend.h): every check now, on the session's server. */
int ik__zk_hazards_check(ik__backend *be, char *why, size_t why_len);

/* The gated writes of the seam: each re-checks first when due (a new connection,
 * a server other than the one last checked, or the hazard interval passed) and,
 * while a check is refused, sends nothing and answers IK_EUNSAFE. */
int ik__zk_gated_slot_acquire(ik__backend *be, const ik__slot_request *req, ik__slot_grant *out,
                              char *why, size_t why_len);
int ik__zk_gated_slot_persist(ik__backend *be, void *handle, int64_t record_ms,
                              ik__lease_proof *proof, int64_t *written_ms);
int ik__zk_gated_tag_advance(ik__backend *be, const char *app, const char *name, ik_tag_kind kind,
                             ik__tag_write *w, int64_t *first);

/* The pure parts, for tests/unit/test_zk_hazards.c. */
/* A four-letter word's answer that says the word is not in 4lw.commands.whitelist. */
int ik__zk_4lw_closed(const char *reply);
/* The value of "key=value" (conf) or "key\tvalue" (mntr) lines, or of "key: value"
 * (srvr): into out (cut to len); 0, or -1 if there is no such line. */
int ik__zk_4lw_value(const char *reply, const char *key, char *out, size_t len);
/* The voting members of a /zookeeper/config text (server.N=... lines whose role is
 * participant, the default); 0 for an empty one (a standalone server). */
int ik__zk_config_voters(const char *config, int len);

#endif
