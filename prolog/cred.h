/* toposcope agents — the session key inside a MUNGE credential (prolog and step mode). */
#ifndef TOPOSCOPE_CRED_H
#define TOPOSCOPE_CRED_H

#include "agent.h"

/* Fill k with MUNGE encode/decode: credentials decodable only by `uid` (MUNGE's UID
 * restriction), and accepted by workers only when encoded by `uid`. In prolog mode both are
 * root (the agents run as root from slurmd); in step mode the job's user. */
void cred_munge_keyx(agent_keyx *k, uid_t uid);

#endif
