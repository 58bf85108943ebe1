/* toposcope — the simulator transport: a virtual clock over a fabric and its latency model.
 *
 * A node takes part in at most one ping-pong at a time; the pairs of a round run concurrently
 * and interfere per the model (extra flows on a directed link add flow_penalty_us); the round
 * ends when its slowest pair ends; time advances by the real cost of every sample, timeout and
 * control step. */
#ifndef TOPOSCOPE_SIM_H
#define TOPOSCOPE_SIM_H

#include <stdint.h>
#include "toposcope/fabric.h"
#include "toposcope/model.h"
#include "toposcope/probe.h"

typedef struct ts_sim ts_sim;

/* truth and model must outlive the simulator. */
int ts_sim_create(ts_sim **out, const ts_fabric *truth, const ts_model *model, uint64_t run_seed,
                  ts_error *err);
void ts_sim_free(ts_sim *s);
ts_transport *ts_sim_transport(ts_sim *s);
double ts_sim_now_us(const ts_sim *s);
/* CPU seconds spent simulating (drawing samples), so reports can separate the cost of the
 * planner and inference from the cost of the simulation itself. */
double ts_sim_cpu_s(const ts_sim *s);
/* One sample of the pair's RTT with `concurrent` describing no interference (for tests):
 * returns the RTT in microseconds or a negative value when the probe was lost. */
double ts_sim_sample_once(ts_sim *s, int node_a, int node_b);

#endif
