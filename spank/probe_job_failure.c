/* Not part of the plugin: mk/spank.mk compiles it (syntax only) against the Slurm headers the
 * plugin is built with. It compiles where they have Slurm 25.05's failure mode for
 * slurm_spank_init, whose values are enum members that no #ifdef can see. */
#include <slurm/spank.h>

int probe_mode = ESPANK_JOB_FAILURE;
