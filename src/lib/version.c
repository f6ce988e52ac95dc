/* version.c: the library's version (ik_version), as include/idkeeper.h's
 * IK_VERSION_* say it. */
#include "idkeeper.h"

const char *ik_version(void)
{
    return IK_VERSION_STRING;
}
